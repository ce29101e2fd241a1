// `dagsgd train`: the MPI data-parallel training runtime; with --trace DIR it writes a run
// directory.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <stdexcept>
#include <type_traits>

#include "command.h"
#include "dagsgd/runtime/trainer.h"

namespace dagsgd::tools {

namespace {

struct TrainFlags {
  std::string model = "mlp";
  std::string widths;
  std::string epochs;
  std::string iterations;
  std::string batch;
  std::string lr;
  std::string momentum;
  std::string seed;
  std::string exchange = "allreduce";
  std::string overlap = "none";
  std::string precision = "fp32";
  std::string topk;
  std::string sync = "bsp";
  std::string trace;
  bool force = false;
  std::string data;
  std::string warmup;
  bool no_eval = false;
  std::string device = "cpu";
};

// Flags are taken as strings and parsed here, so a bad value is reported once, by rank 0, and
// not by CLI11 on every rank before MPI even starts.
template <class T>
model::Expected<void> number(const std::string& flag, const std::string& text, T& out) {
  if (text.empty()) return model::ok();
  try {
    std::size_t pos = 0;
    if constexpr (std::is_floating_point_v<T>) {
      out = static_cast<T>(std::stod(text, &pos));
    } else {
      long long v = std::stoll(text, &pos);
      if (v < static_cast<long long>(std::numeric_limits<T>::min()) ||
          v > static_cast<long long>(std::numeric_limits<T>::max())) {
        throw std::out_of_range(text);
      }
      out = static_cast<T>(v);
    }
    if (pos != text.size()) throw std::invalid_argument(text);
  } catch (const std::exception&) {
    return model::Error{flag + ": '" + text + "' is not a valid number"};
  }
  return model::ok();
}

model::Expected<runtime::TrainConfig> make_config(const TrainFlags& f,
                                                  const std::vector<std::string>& extras) {
  if (!extras.empty()) {
    return model::Error{"train: unexpected argument '" + extras.front() +
                        "' (run 'dagsgd train --help')"};
  }
  runtime::TrainConfig c;
  c.model = f.model;
  if (c.model.empty()) return model::Error{"--model must not be empty (mlp, cnn or a file)"};
  if (!f.widths.empty()) {
    if (c.model != "mlp") return model::Error{"--widths applies to --model mlp only"};
    auto w = runtime::parse_widths(f.widths);
    if (!w) return w.error();
    c.widths = *w;
  }
  DAGSGD_TRY(number("--epochs", f.epochs, c.epochs));
  DAGSGD_TRY(number("--iterations", f.iterations, c.iterations));
  DAGSGD_TRY(number("--batch", f.batch, c.batch));
  DAGSGD_TRY(number("--lr", f.lr, c.lr));
  DAGSGD_TRY(number("--momentum", f.momentum, c.momentum));
  DAGSGD_TRY(number("--seed", f.seed, c.seed));
  DAGSGD_TRY(number("--topk", f.topk, c.topk));
  DAGSGD_TRY(number("--warmup", f.warmup, c.warmup));
  if (!f.topk.empty() && !(c.topk > 0)) return model::Error{"--topk must be in (0, 1]"};
  // With only --iterations, run as many epochs as it takes.
  if (!f.iterations.empty() && f.epochs.empty()) c.epochs = 1 << 20;
  auto ex = runtime::parse_exchange(f.exchange);
  if (!ex) return ex.error();
  c.exchange = *ex;
  DAGSGD_TRY(runtime::parse_overlap(f.overlap, c));
  auto pr = runtime::parse_precision(f.precision);
  if (!pr) return pr.error();
  c.precision = *pr;
  DAGSGD_TRY(runtime::parse_sync(f.sync, c));
  c.trace_dir = f.trace;
  c.force = f.force;
  if (f.force && f.trace.empty()) return model::Error{"--force needs --trace DIR"};
  if (!f.data.empty()) c.data_dir = f.data;
  c.evaluate = !f.no_eval;
  auto dev = runtime::parse_device(f.device);
  if (!dev) return dev.error();
  c.device = *dev;
  DAGSGD_TRY(runtime::validate(c));
  return c;
}

std::vector<std::string> own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> argv;
  std::string cur;
  for (char ch : all) {
    if (ch == '\0') {
      argv.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(ch);
    }
  }
  if (!cur.empty()) argv.push_back(cur);
  return argv;
}

}  // namespace

void add_train(CLI::App& root, Action& action) {
  auto f = std::make_shared<TrainFlags>();
  CLI::App* sub = root.add_subcommand(
      "train",
      "Train a model on Fashion-MNIST with synchronous data-parallel SGD over MPI ranks\n"
      "(run under 'mpirun -np P'; without mpirun it is one rank). --trace DIR writes a run\n"
      "directory (manifest.json + rank-<r>.trace.json) for replay and analysis.");
  sub->allow_extras();
  // A repeated flag takes its last value (as most launchers' wrappers expect) instead of a CLI11
  // error that every rank would print.
  sub->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  sub->add_option("--model", f->model, "mlp, cnn, or a network-spec JSON file of fc/relu layers")
      ->capture_default_str();
  sub->add_option("--widths", f->widths, "hidden layer widths of the mlp (default 256,128)");
  sub->add_option("--epochs", f->epochs, "epochs to train (default 1)");
  sub->add_option("--iterations", f->iterations, "stop after this many iterations");
  sub->add_option("--batch", f->batch, "mini-batch size per rank (default 64)");
  sub->add_option("--lr", f->lr, "learning rate (default 0.05)");
  sub->add_option("--momentum", f->momentum, "SGD momentum (default 0.9)");
  sub->add_option("--seed", f->seed, "seed of initialization and data order (default 1)");
  sub->add_option("--exchange", f->exchange, "gradient exchange: allreduce, ps, asa")
      ->capture_default_str();
  sub->add_option("--overlap", f->overlap, "none, wfbp, or bucket:MB (MiB)")->capture_default_str();
  sub->add_option("--precision", f->precision, "fp32 or fp16 on the wire")->capture_default_str();
  sub->add_option("--topk", f->topk, "sparsify: exchange this fraction of gradients, top-k");
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
  sub->callback([f, sub, &action] {
    action = [f, sub]() -> int {
      auto cfg = make_config(*f, sub->remaining());
      if (!cfg) {
        // Every rank exits 2; only rank 0 says why, once.
        if (runtime::launcher_rank() == 0) report_error(cfg.error().message);
        return kExitBadInput;
      }
      runtime::MpiSession mpi(nullptr, nullptr);
      auto result = runtime::train(*cfg, own_command_line(), [](const std::string& line) {
        std::printf("%s\n", line.c_str());
        std::fflush(stdout);
      });
      if (!result) {
        if (mpi.rank() == 0) report_error(result.error().message);
        return kExitBadInput;
      }
      return kExitOk;
    };
  });
}

}  // namespace dagsgd::tools
