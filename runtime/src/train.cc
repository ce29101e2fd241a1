// `dagsgd train` from start to end: checks every rank agrees on, the data shards, the epochs,
// and, with --trace, the run directory whose rank traces grow as training runs.
#include <mpi.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <optional>

#include "dagsgd/model/paths.h"
#include "dagsgd/runtime/model_builder.h"
#include "dagsgd/runtime/rank_trace.h"
#include "mpi_world.h"
#include "run_directory.h"
#include "trainer_impl.h"

namespace dagsgd::runtime {

namespace {

std::string percent(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100.0 * f);
  return buf;
}

std::string epoch_line(const EpochResult& er, bool evaluated) {
  char line[256];
  std::snprintf(line, sizeof line, "epoch %d: %lld iterations, train loss %.4f", er.epoch,
                static_cast<long long>(er.iterations), er.train_loss);
  std::string msg = line;
  if (evaluated) {
    std::snprintf(line, sizeof line, ", test loss %.4f, test accuracy %s", er.test_loss,
                  percent(er.test_accuracy).c_str());
    msg += line;
  }
  std::snprintf(line, sizeof line, ", %.2f s", er.seconds);
  return msg + line;
}

std::string stats_line(const trace::IterationStats& s) {
  char line[160];
  std::snprintf(line, sizeof line,
                "iteration time (rank 0, %d warm-up excluded): mean %.3f ms, p50 %.3f ms, "
                "p95 %.3f ms",
                s.warmup, 1e3 * s.mean_s, 1e3 * s.p50_s, 1e3 * s.p95_s);
  return line;
}

// The model's shape for the GPU: a network file the GPU cannot run is refused on any machine.
model::Expected<void> check_device_model(const TrainConfig& cfg) {
  auto layers = build_model(cfg);
  if (!layers) return layers.error();
  auto fc = fc_layers_for_device(std::move(*layers), cfg.model);
  if (!fc) return fc.error();
  return model::ok();
}

}  // namespace

// One call of train(): the steps in order, each collective, each failing on every rank at once.
class TrainingRun {
 public:
  TrainingRun(const TrainConfig& cfg, std::vector<std::string> argv, const LogFn& log)
      : cfg_(cfg), argv_(std::move(argv)), log_(log), rank_(world_rank()), size_(world_size()) {}

  model::Expected<TrainResult> run() {
    auto result = run_steps();
    // A run that failed before any rank wrote into its new directory leaves none behind.
    if (!result && dir_ && rank_ == 0) dir_->discard_if_empty();
    return result;
  }

 private:
  model::Expected<TrainResult> run_steps() {
    DAGSGD_TRY(agree(validate(cfg_)));
    if (cfg_.device == DeviceKind::kCuda) {
      DAGSGD_TRY(agree(check_device_model(cfg_)));
      DAGSGD_TRY(agree(probe_cuda_device()));
    }
    clock_start_ = measure_clock_offset();
    if (tracing()) DAGSGD_TRY(prepare_run_directory());
    DAGSGD_TRY(load_shards());
    DAGSGD_TRY(make_trainer());
    placement_ = gather_placement();
    say_setup();
    // ts = 0 in every rank's trace is rank 0's clock when training starts.
    base_ = now_ns();
    MPI_Bcast(&base_, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
    if (tracing()) DAGSGD_TRY(start_trace());
    TrainResult result;
    DAGSGD_TRY(run_epochs(result));
    ClockAlignment align(clock_start_);
    ClockSample end = measure_clock_offset();
    align.set_end(end);
    residual_ = static_cast<double>(align.residual_ns());
    MPI_Allreduce(MPI_IN_PLACE, &residual_, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (!tracing()) return result;
    DAGSGD_TRY(finish_trace(end, result));
    result.run_dir = cfg_.trace_dir;
    say("trace: " + cfg_.trace_dir + " (run.manifest, " + std::to_string(size_) +
        " rank trace(s))");
    return result;
  }

  bool tracing() const { return !cfg_.trace_dir.empty(); }
  void say(const std::string& s) const {
    if (rank_ == 0 && log_) log_(s);
  }

  model::Expected<void> prepare_run_directory() {
    run_id_ = broadcast_string(rank_ == 0 ? make_run_id() : std::string());
    model::Expected<void> ready = model::ok();
    if (rank_ == 0) {
      auto dir = RunDirectory::prepare(cfg_.trace_dir, cfg_.force, "--trace", true);
      if (dir) {
        dir_ = std::move(*dir);
      } else {
        ready = dir.error();
      }
    }
    return agree(ready);
  }

  // Each rank reads its own shard of the training set and of the test set.
  model::Expected<void> load_shards() {
    model::Expected<void> st = model::ok();
    auto train_set = load_idx(cfg_.data_dir, "train", rank_, size_, cfg_.seed);
    if (train_set) {
      auto test_set = load_idx(cfg_.data_dir, "t10k", rank_, size_, cfg_.seed);
      if (test_set) {
        train_set_ = std::move(*train_set);
        test_set_ = std::move(*test_set);
      } else {
        st = test_set.error();
      }
    } else {
      st = train_set.error();
    }
    DAGSGD_TRY(agree(st));
    if (train_set_.features != kImageInputs || test_set_.features != kImageInputs) {
      return model::Error{"'" + cfg_.data_dir + "': images are not 28x28"};
    }
    return model::ok();
  }

  model::Expected<void> make_trainer() {
    std::int64_t min_shard = train_set_.count;
    MPI_Allreduce(MPI_IN_PLACE, &min_shard, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
    auto made = Trainer::create(cfg_, std::move(train_set_), tracing());
    DAGSGD_TRY(agree(made ? model::ok() : model::Expected<void>(made.error())));
    trainer_ = std::move(*made);
    Trainer::Impl& im = *trainer_->impl_;
    // Every rank runs the same number of iterations per epoch (shards differ by one sample).
    im.batches.set_batches_per_epoch(min_shard / cfg_.batch);
    im.planned = std::min<std::int64_t>(
        cfg_.iterations > 0 ? cfg_.iterations : INT64_MAX,
        static_cast<std::int64_t>(cfg_.epochs) * im.batches.batches_per_epoch());
    return model::ok();
  }

  void say_setup() const {
    const Trainer::Impl& im = *trainer_->impl_;
    say("dagsgd train: model " + cfg_.model + ", " + std::to_string(im.model.layer_count()) +
        " layers, " + std::to_string(im.model.param_count()) + " parameters; " +
        std::to_string(size_) + " rank(s), batch " + std::to_string(cfg_.batch) +
        " per rank (global " + std::to_string(cfg_.batch * size_) + "), " +
        std::to_string(im.batches.batches_per_epoch()) + " iterations per epoch; exchange " +
        exchange_name(cfg_.exchange) + ", overlap " + overlap_name(cfg_) + ", precision " +
        precision_name(cfg_.precision) +
        (cfg_.topk > 0 ? ", topk " + config_map(cfg_, size_)["topk"] : "") + ", sync " +
        sync_name(cfg_) + ", " + std::to_string(im.exchange.group_count()) + " gradient group(s)" +
        (im.dev ? "; device " + im.dev->describe() + " (rank 0)" : ""));
  }

  // Every rank opens its trace before the first iteration; rank 0 writes a manifest that says
  // the run is not finished, so a directory left by a killed run describes itself.
  model::Expected<void> start_trace() {
    Trainer::Impl& im = *trainer_->impl_;
    RankTraceConfig rc;
    rc.path = cfg_.trace_dir + "/" + trace::rank_trace_name(rank_);
    rc.rank = rank_;
    rc.world_size = size_;
    rc.base_ns = base_;
    rc.start = clock_start_;
    rc.host = host_name();
    rc.os_pid = getpid();
    rc.run_id = run_id_;
    DAGSGD_TRY(agree(im.open_trace(rc)));
    trace::RunManifest m = manifest();
    m.status = "incomplete: training did not finish";
    return agree(rank_ == 0 ? trace::write_manifest(cfg_.trace_dir, m) : model::ok());
  }

  model::Expected<void> run_epochs(TrainResult& result) {
    Trainer::Impl& im = *trainer_->impl_;
    std::vector<double> times;
    const std::int64_t limit = cfg_.iterations > 0 ? cfg_.iterations : INT64_MAX;
    for (int e = 1; e <= cfg_.epochs && im.iteration < limit; ++e) {
      im.batches.start_epoch(e - 1);
      im.loss_sum = 0;
      im.loss_count = 0;
      std::int64_t t_epoch = now_ns();
      for (std::int64_t b = 0; b < im.batches.batches_per_epoch() && im.iteration < limit; ++b) {
        times.push_back(model::to_seconds(im.step()));
      }
      if (im.dev) DAGSGD_TRY(agree(im.dev_status));
      EpochResult er;
      er.epoch = e;
      er.seconds = model::to_seconds(now_ns() - t_epoch);
      er.iterations = im.iteration;
      double ls[2] = {im.loss_sum, static_cast<double>(im.loss_count)};
      MPI_Allreduce(MPI_IN_PLACE, ls, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      er.train_loss = ls[1] > 0 ? ls[0] / ls[1] : 0;
      // Every rank has the same sums: all stop here together.
      if (!std::isfinite(er.train_loss)) return diverged(er);
      if (cfg_.evaluate) {
        std::tie(er.test_loss, er.test_accuracy) = im.evaluate(test_set_);
        if (im.dev) DAGSGD_TRY(agree(im.dev_status));
      }
      say(epoch_line(er, cfg_.evaluate));
      result.epochs.push_back(er);
    }
    result.iterations = im.iteration;
    result.iteration_stats.warmup = static_cast<int>(
        std::min<std::int64_t>(cfg_.warmup, std::max<std::int64_t>(0, im.iteration - 1)));
    result.iteration_stats.times_s = times;
    trace::compute_stats(result.iteration_stats);
    say(stats_line(result.iteration_stats));
    return model::ok();
  }

  model::Error diverged(const EpochResult& er) const {
    char line[200];
    std::snprintf(line, sizeof line,
                  "training diverged in epoch %d (train loss %g by iteration %lld): lower --lr "
                  "(%g)",
                  er.epoch, er.train_loss, static_cast<long long>(er.iterations), cfg_.lr);
    return model::Error{line};
  }

  model::Expected<void> finish_trace(const ClockSample& end, const TrainResult& result) {
    Trainer::Impl& im = *trainer_->impl_;
    if (im.dev) {
      auto last = im.dev->finish_events();
      if (last) im.spans.add_device_events(std::move(*last));
      DAGSGD_TRY(agree(last ? model::ok() : model::Expected<void>(last.error())));
    }
    DAGSGD_TRY(agree(im.spans.close(end)));
    trace::RunManifest m = manifest();
    if (cfg_.evaluate && !result.epochs.empty()) {
      m.config["final_test_accuracy"] = std::to_string(result.epochs.back().test_accuracy);
    }
    m.iterations = result.iteration_stats;
    m.clock_residual_ns = residual_;
    return agree(rank_ == 0 ? trace::write_manifest(cfg_.trace_dir, m) : model::ok());
  }

  trace::RunManifest manifest() const {
    const Trainer::Impl& im = *trainer_->impl_;
    trace::RunManifest m;
    m.tool_version = model::tool_version();
    m.kind = "train";
    m.command = argv_;
    m.ranks = size_;
    m.hosts = placement_.hosts;
    m.machines = placement_.machines;
    m.cpus = placement_.cpus;
    m.model = cfg_.model;
    m.config = config_map(cfg_, size_);
    m.config["gradient_groups"] = std::to_string(im.exchange.group_count());
    m.config["parameters"] = std::to_string(im.model.param_count());
    if (im.dev) m.config["device_name"] = im.dev->describe();
    for (int r = 0; r < size_; ++r) m.traces.push_back(trace::rank_trace_name(r));
    m.run_id = run_id_;
    return m;
  }

  const TrainConfig& cfg_;
  std::vector<std::string> argv_;
  const LogFn& log_;
  const int rank_;
  const int size_;
  ClockSample clock_start_;
  std::int64_t base_ = 0;
  double residual_ = 0;
  std::string run_id_;
  std::optional<RunDirectory> dir_;  // rank 0's, when it prepared one
  Dataset train_set_;
  Dataset test_set_;
  std::unique_ptr<Trainer> trainer_;
  Placement placement_;
};

model::Expected<TrainResult> train(const TrainConfig& cfg, const std::vector<std::string>& argv,
                                   const LogFn& log) {
  return TrainingRun(cfg, argv, log).run();
}

}  // namespace dagsgd::runtime
