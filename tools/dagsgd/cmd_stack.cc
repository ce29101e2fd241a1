// dagsgd stack: the software stacks a user can pick for --stack (sourced stacks, short names,
// FRAMEWORK+LIBRARY) and what one name resolves to, as a self-contained stack file.
#include <string>

#include "command.h"
#include "dagsgd/model/stack.h"
#include "dagsgd/model/stack_names.h"
#include "dagsgd/reports/stack_report.h"

namespace dagsgd::tools {

namespace {

struct StackListOptions {
  bool json = false;
};

struct StackShowOptions {
  std::string name;
};

constexpr const char* kStackHelp =
    "Software stacks above the links (collective library, transport, framework) that --stack\n"
    "takes on predict, whatif, replay and calibrate. Run 'dagsgd stack list'.";

constexpr const char* kStackListHelp =
    "List every sourced stack (framework, library, transport, what it changes, source), the\n"
    "short names (pytorch-ddp, horovod, nccl, ...) and the frameworks and libraries that\n"
    "FRAMEWORK+LIBRARY joins (e.g. pytorch-ddp+nccl-2.7-socket).";

constexpr const char* kStackShowHelp =
    "Print what a --stack name resolves to as one self-contained stack file, every constant\n"
    "with its source. Example: dagsgd stack show pytorch-ddp+nccl-2.7-socket";

int run_stack_list(const StackListOptions& o) {
  auto names = model::load_stack_names();
  if (!names) return report_error(names.error().message, kExitFailure);
  print(o.json ? reports::stack_list_json(*names) : reports::stack_list_text(*names));
  return kExitOk;
}

int run_stack_show(const StackShowOptions& o) {
  auto stack = model::load_stack(o.name);
  if (!stack) return report_error(stack.error().message);
  print(model::stack_to_json(*stack) + "\n");
  return kExitOk;
}

}  // namespace

void add_stack(CLI::App& root, Action& action) {
  CLI::App* stack = root.add_subcommand("stack", kStackHelp)->require_subcommand(1);
  auto [list, l] =
      add_command<StackListOptions>(*stack, action, "list", kStackListHelp, run_stack_list);
  list->add_flag("--json", l->json, "Print one JSON object instead of text");
  auto [show, s] =
      add_command<StackShowOptions>(*stack, action, "show", kStackShowHelp, run_stack_show);
  show->add_option("NAME", s->name,
                   "A stack name (dagsgd stack list), FRAMEWORK+LIBRARY, or a stack file (.json)")
      ->required();
}

}  // namespace dagsgd::tools
