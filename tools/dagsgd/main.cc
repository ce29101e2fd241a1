// The dagsgd command line: git-style subcommands, exit 0 / 1 (failure) / 2 (bad input or usage).
#include <cstdio>
#include <iostream>

#include "command.h"
#include "dagsgd/model/paths.h"

int main(int argc, char** argv) {
  using namespace dagsgd::tools;
  CLI::App app{
      "dagsgd: trace, replay and what-if analysis of synchronous data-parallel SGD.\n"
      "Run 'dagsgd <command> --help' for a command's options.",
      "dagsgd"};
  app.set_version_flag("--version", std::string("dagsgd ") + dagsgd::model::tool_version());
  app.require_subcommand(1);
  Action action;
  // Subcommands, in the order `dagsgd --help` lists them.
  add_predict(app, action);
  add_whatif(app, action);
  add_calibrate(app, action);
  add_analyze(app, action);
  add_replay(app, action);
  add_topology(app, action);
#ifdef DAGSGD_WITH_MPI
  add_train(app, action);
  add_collect(app, action);
  add_validate(app, action);
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    report_error(e.what());
    std::fprintf(stderr, "Run 'dagsgd --help' or 'dagsgd <command> --help' for usage.\n");
    return kExitBadInput;
  }
  if (!action) return report_error("no command given; run 'dagsgd --help'");
  return action();
}
