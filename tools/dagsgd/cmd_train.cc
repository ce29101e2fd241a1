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
  sub->add_option("--model", f->model, "mlp, cnn, or a network-spec JSON file of fc/relu layers")
      ->capture_default_str();
  sub->add_option("--widths", f->widths, "hidden layer widths of the mlp (default 256,128)");
  sub->add_option("--epochs", f->epochs, "epochs to train, 1..1000000 (default 1)");
  sub->add_option("--iterations", f->iterations, "stop after this many iterations (>= 1)");
  sub->add_option("--batch", f->batch, "mini-batch size per rank, 1..65536 (default 64)");
  sub->add_option("--lr", f->lr, "learning rate, > 0 (default 0.05)");
  sub->add_option("--momentum", f->momentum, "SGD momentum, in [0, 1) (default 0.9)");
  sub->add_option("--seed", f->seed, "seed of initialization and data order (default 1)");
  sub->add_option("--exchange", f->exchange, "gradient exchange: allreduce, ps, asa")
      ->capture_default_str();
  sub->add_option("--overlap", f->overlap, "none, wfbp, or bucket:MB (MiB)")->capture_default_str();
  sub->add_option("--precision", f->precision, "fp32 or fp16 on the wire")->capture_default_str();
  sub->add_option("--topk", f->topk, "sparsify: exchange this fraction of gradients, in (0, 1]");
  sub->add_option("--sync", f->sync, "bsp, or easgd:TAU,ALPHA")->capture_default_str();
  sub->add_option("--trace", f->trace, "write a run directory here");
  sub->add_flag("--force", f->force, "overwrite a non-empty --trace directory");
  sub->add_option(
      "--data", f->data,
      "Fashion-MNIST directory (default " + std::string(runtime::kFashionMnistDir) + ")");
  sub->add_option("--warmup", f->warmup,
                  "iterations left out of the timing statistics (default 2)");
  sub->add_flag("--no-eval", f->no_eval, "skip the test-set evaluation");
  sub->add_option("--device", f->device,
                  "cpu, or cuda (mlp and fc/relu FILE models; one GPU per rank)")
      ->capture_default_str();
  sub->callback(
      [f, sub, &action] { action = [f, sub] { return run_train(*f, sub->remaining()); }; });
}

}  // namespace dagsgd::tools
