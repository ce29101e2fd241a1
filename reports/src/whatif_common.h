// What the what-if report files share: the parts of an iteration as the reports show them and
// escaping for each output format. Private to reports/.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "dagsgd/model/units.h"
#include "dagsgd/sim/predict.h"
#include "result_json.h"

namespace dagsgd::reports {
struct WhatifReport;
}

namespace dagsgd::reports::detail {

using model::Nanos;

// The parts of one worker's iteration as the report shows them (ns).
struct Parts {
  Nanos compute = 0;
  Nanos comm_exposed = 0;
  Nanos comm_overlapped = 0;
  Nanos io = 0;
  Nanos update = 0;
  Nanos idle = 0;
};

inline Parts parts_of(const sim::PredictResult& r) {
  const auto& b = r.breakdown;
  return {b.forward + b.backward, b.comm_exposed, std::max<Nanos>(0, b.comm_total - b.comm_exposed),
          b.io + b.h2d,           b.update,       b.idle};
}

inline double exposed_share(const sim::PredictResult& r) {
  return r.iteration > 0
             ? static_cast<double>(r.breakdown.comm_exposed) / static_cast<double>(r.iteration)
             : 0.0;
}

inline double ms(model::Nanos t) { return model::to_millis(t); }

// A CSV field, quoted when it holds a comma, quote or newline.
std::string csv_field(const std::string& s);
// A Markdown table cell ('|' escaped).
std::string md_cell(const std::string& s);
// Text in HTML.
std::string html_escape(const std::string& s);
// The sentences a person reads first (Markdown bold marks the configurations).
std::vector<std::string> findings(const WhatifReport& report);
// The rows whose iteration was simulated on the flow-level tier and kept (per fabric, the
// largest GPU count): their busiest links make the link view.
std::vector<std::size_t> link_view_rows(const WhatifReport& report);
// A timeline span's name: "forward layer 3", "allreduce group 2".
std::string span_name(const sim::TimelineSpan& s);

}  // namespace dagsgd::reports::detail
