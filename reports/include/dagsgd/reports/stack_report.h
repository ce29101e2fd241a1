// Rendering the software stacks a user can pick (model/stack_names.h) for people (text) and
// machines (JSON): what `dagsgd stack list` prints.
#pragma once

#include <string>

#include "dagsgd/model/stack_names.h"

namespace dagsgd::reports {

// One block per sourced stack (framework, library, transport, then what it changes and its
// source), then the short names and the frameworks and libraries a FRAMEWORK+LIBRARY joins.
std::string stack_list_text(const model::StackNames& names);
// One JSON object: "stacks" (the rows), "short_names" (every short name, framework names
// included, with its stack and meaning), "frameworks", "libraries".
std::string stack_list_json(const model::StackNames& names);

}  // namespace dagsgd::reports
