// The job effects as a part of analyze's JSON ("job_effects"). Private to reports/.
#pragma once

#include <nlohmann/json.hpp>

#include "dagsgd/sim/job_effects.h"

namespace dagsgd::reports::detail {

nlohmann::ordered_json job_effects_json(const sim::JobEffects& e);

}  // namespace dagsgd::reports::detail
