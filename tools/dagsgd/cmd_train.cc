// `dagsgd train`: the MPI data-parallel training runtime; with --trace DIR it writes a run
// directory.
#include <cstdio>
#include <memory>

#include "command.h"
#include "dagsgd/runtime/launcher.h"
#include "dagsgd/runtime/process.h"
#include "dagsgd/runtime/trainer.h"

namespace dagsgd::tools {

namespace {

int run_train(const runtime::TrainFlags& flags, const std::vector<std::string>& extras) {
  auto cfg = runtime::config_from_flags(flags, extras);
  if (!cfg) {
    // Every rank exits 2; only rank 0 says why, once (MPI is not started for a bad flag).
    if (runtime::launcher_env().value_or(runtime::LauncherEnv{}).rank == 0) {
      report_error(cfg.error().message);
    }
    return kExitBadInput;
  }
  runtime::MpiSession mpi(nullptr, nullptr);
  auto result = runtime::train(*cfg, runtime::own_command_line(), [](const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  });
  if (!result) {
    if (mpi.rank() == 0) report_error(result.error().message);
    return kExitBadInput;
  }
  return kExitOk;
}

}  // namespace

void add_train(CLI::App& root, Action& action) {
  auto f = std::make_shared<runtime::TrainFlags>();
  CLI::App* sub = root.add_subcommand(
      "train",
      "Train a model on Fashion-MNIST with synchronous data-parallel SGD over MPI ranks\n"
      "(run under 'mpirun -np P'; without mpirun it is one rank). --trace DIR writes a run\n"
      "directory (run.manifest + rank-<r>.trace.json) for replay and analysis.");
  sub->allow_extras();
  // A repeated flag takes its last value (as most launchers' wrappers expect) instead of a CLI11
  // error that every rank would print. Values are strings: config_from_flags() checks them.
  sub->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  add_flag_table(*sub, *f, runtime::train_flags());
  sub->callback(
      [f, sub, &action] { action = [f, sub] { return run_train(*f, sub->remaining()); }; });
}

}  // namespace dagsgd::tools
