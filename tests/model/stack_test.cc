// Software stacks (stack.h): the bundled files load with a source for every constant, bad files
// are refused naming the file and field, the algorithm tables read as the library's decision
// rules, stacks price collectives, and transfer calibration recovers a stack's parameters.
#include "dagsgd/model/stack.h"
#include "common/text.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <memory>

#include "dagsgd/model/calibration.h"
#include "dagsgd/model/comm_model.h"
#include "dagsgd/model/io.h"
#include "dagsgd/model/ssgd.h"

namespace dagsgd::model {
namespace {

using dagsgd::testing::contains;

TEST(Stack, EveryBundledStackLoadsWithSources) {
  const auto names = bundled_stacks().names();
  ASSERT_GE(names.size(), 3u);
  for (const auto& name : names) {
    auto s = load_stack(name);
    ASSERT_TRUE(s.ok()) << name << ": " << s.error().message;
    EXPECT_EQ(s->name, name);
    EXPECT_FALSE(s->sources.empty()) << name;
    for (const auto& [field, source] : s->sources) {
      EXPECT_FALSE(source.empty()) << name << " " << field;
    }
    EXPECT_TRUE(validate_stack(*s).ok()) << name;
  }
}

TEST(Stack, BaseFieldsAreInheritedAndOverridden) {
  auto ddp = load_stack("pytorch-ddp-nccl-2.7-ib");
  ASSERT_TRUE(ddp.ok()) << ddp.error().message;
  EXPECT_EQ(ddp->library.kind, "nccl");
  ASSERT_TRUE(ddp->framework.has_value());
  EXPECT_EQ(ddp->framework->grouping, "bucket:25,1");
  EXPECT_TRUE(contains(ddp->source_of("framework.grouping"), "bucket_cap_mb"));
  // Inherited from nccl-2.7-ib, with its source.
  EXPECT_TRUE(contains(ddp->source_of("library.algorithms"), "tuning.cc"));
  // DDP's copies into its buckets and back (docs/gpu-effects.md), from reducer.cpp.
  EXPECT_EQ(ddp->framework->copy_in_bytes, 8);
  EXPECT_EQ(ddp->framework->copy_back_bytes, 8);
  EXPECT_TRUE(contains(ddp->source_of("framework.copy_in_bytes"), "reducer.cpp"));
}

TEST(Stack, JsonRoundTrips) {
  for (const char* name : {"openmpi-4.1-tcp", "horovod-0.19-nccl-2.7-ib", "nccl-2.0-socket",
                           "pytorch-ddp-nccl-2.7-ib"}) {
    auto s = load_stack(name);
    ASSERT_TRUE(s.ok()) << s.error().message;
    auto back = parse_stack_json(stack_to_json(*s), "roundtrip.json");
    ASSERT_TRUE(back.ok()) << name << ": " << back.error().message;
    EXPECT_EQ(back->library, s->library) << name;
    EXPECT_EQ(back->framework, s->framework) << name;
    // Every source survives; fields left at their default say so.
    for (const auto& [field, source] : s->sources) {
      EXPECT_EQ(back->source_of(field), source) << name << " " << field;
    }
    for (const auto& [field, source] : back->sources) {
      if (s->source_of(field).empty()) {
        EXPECT_TRUE(contains(source, "default")) << field;
      }
    }
  }
}

TEST(Stack, OpenMpiTablesAreTheTunedAndLibnbcRules) {
  auto s = load_stack("openmpi-4.1-tcp");
  ASSERT_TRUE(s.ok()) << s.error().message;
  const auto& lib = s->library;
  // coll_tuned_decision_fixed.c: 2 ranks, 8 B -> ring; 1 KiB -> recursive doubling; large ->
  // rabenseifner. 4 ranks: above 8 KiB rabenseifner.
  EXPECT_EQ(rule_algorithm(lib.blocking, 2, 4), "ring");
  EXPECT_EQ(rule_algorithm(lib.blocking, 2, 1024), "recursive_doubling");
  EXPECT_EQ(rule_algorithm(lib.blocking, 2, 1 << 20), "rabenseifner");
  EXPECT_EQ(rule_algorithm(lib.blocking, 4, 4096), "recursive_doubling");
  EXPECT_EQ(rule_algorithm(lib.blocking, 4, 1 << 20), "rabenseifner");
  // nbc_iallreduce.c: binomial below 4 ranks or 64 KiB, and always in place.
  EXPECT_EQ(rule_algorithm(lib.nonblocking, 2, 1 << 20), "binomial");
  EXPECT_EQ(rule_algorithm(lib.nonblocking, 8, 1 << 10), "binomial");
  EXPECT_EQ(rule_algorithm(lib.nonblocking, 8, 1 << 20), "rabenseifner");
  EXPECT_EQ(rule_algorithm(lib.nonblocking_in_place, 8, 1 << 20), "binomial");
  // The runtime's call is the in-place non-blocking one.
  EXPECT_EQ(&call_rules(*s), &lib.nonblocking_in_place);
  // One tcp BTL connection per peer: transfers between two ranks run one at a time; NCCL's
  // channels do not (the default).
  EXPECT_EQ(lib.peer_transfers, "serial");
  EXPECT_TRUE(contains(s->source_of("library.peer_transfers"), "btl_tcp_links"));
  auto nccl = load_stack("nccl-2.7-ib");
  ASSERT_TRUE(nccl.ok()) << nccl.error().message;
  EXPECT_EQ(nccl->library.peer_transfers, "parallel");
}

TEST(Stack, BadFilesNameTheFileAndField) {
  const std::string head = R"({"schema": "dagsgd-stack/1", "name": "x", "description": "d", )";
  auto no_source = parse_stack_json(
      head + R"("base": "openmpi-4.1-tcp", "library": {"per_message_us": {"value": 3}}})",
      "bad.json");
  ASSERT_FALSE(no_source.ok());
  EXPECT_TRUE(contains(no_source.error().message, "bad.json")) << no_source.error().message;
  EXPECT_TRUE(contains(no_source.error().message, "library.per_message_us"))
      << no_source.error().message;
  EXPECT_TRUE(contains(no_source.error().message, "source")) << no_source.error().message;

  auto bare = parse_stack_json(
      head + R"("base": "openmpi-4.1-tcp", "library": {"per_message_us": 3}})", "bad.json");
  ASSERT_FALSE(bare.ok());
  EXPECT_TRUE(contains(bare.error().message, "must be an object")) << bare.error().message;

  auto unknown = parse_stack_json(
      head + R"("base": "openmpi-4.1-tcp", "library": {"speed": {"value": 1, "source": "s"}}})",
      "bad.json");
  ASSERT_FALSE(unknown.ok());
  EXPECT_TRUE(contains(unknown.error().message, "unknown field 'speed'"))
      << unknown.error().message;

  auto peers = parse_stack_json(
      head + R"("base": "openmpi-4.1-tcp", "library": {"peer_transfers": {"value": "one",)" +
          R"( "source": "s"}}})",
      "bad.json");
  ASSERT_FALSE(peers.ok());
  EXPECT_TRUE(contains(peers.error().message, "library.peer_transfers")) << peers.error().message;
  EXPECT_TRUE(contains(peers.error().message, "parallel")) << peers.error().message;

  auto no_base = parse_stack_json(head + R"("base": "no-such-stack"})", "bad.json");
  ASSERT_FALSE(no_base.ok());
  EXPECT_TRUE(contains(no_base.error().message, "no-such-stack")) << no_base.error().message;

  EXPECT_FALSE(parse_stack_json("{", "bad.json").ok());
  EXPECT_FALSE(load_stack("no-such-stack").ok());
}

// A stack file is read up to the size of a config file, not of a trace.
TEST(Stack, FilesAreReadUpToTheConfigLimit) {
  auto bundled = read_file(std::string(DAGSGD_SOURCE_DIR) + "/datasets/stacks/nccl-2.7-ib.json");
  ASSERT_TRUE(bundled.ok()) << bundled.error().message;
  const std::string path =
      ::testing::TempDir() + "stack-limit-" + std::to_string(::getpid()) + ".json";
  std::string text = *bundled;
  text.resize(static_cast<std::size_t>(kMaxConfigBytes), ' ');
  ASSERT_TRUE(write_file(path, text, true).ok());
  auto s = load_stack(path);
  EXPECT_TRUE(s.ok()) << s.error().message;
  ASSERT_TRUE(write_file(path, text + " ", true).ok());
  s = load_stack(path);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.error().message, "'" + path + "'")) << s.error().message;
  EXPECT_TRUE(contains(s.error().message, "1 MiB limit")) << s.error().message;
  std::remove(path.c_str());
}

Topology nodes(int n, double alpha_ns, double gbps) {
  Topology t;
  t.nodes = n;
  t.inter.alpha_ns = alpha_ns;
  t.inter.beta_ns_per_byte = 8 / gbps;
  return t;
}

double allreduce_ns(const Topology& t, const std::shared_ptr<const StackSpec>& stack,
                    std::int64_t elements, const std::string& algorithm = "auto") {
  ExchangeConfig c;
  c.algorithm = algorithm;
  c.stack = stack;
  auto m = make_comm_model(t, c);
  EXPECT_TRUE(m.ok()) << m.error().message;
  return m.ok() ? static_cast<double>((*m)->exchange_time(elements)) : 0;
}

TEST(Stack, PerMessageCostAndConnectionCapSlowTheBareLinks) {
  auto s = load_stack("openmpi-4.1-tcp");
  ASSERT_TRUE(s.ok()) << s.error().message;
  StackSpec fast = *s;
  fast.library.per_message_ns = 0;
  fast.library.connection_bandwidth = 0;
  StackSpec slow = fast;
  slow.library.per_message_ns = 20'000;
  slow.library.connection_bandwidth = 1e9 / 8;  // 1 Gbit/s per connection
  const Topology t = nodes(4, 15'000, 10);
  const auto f = std::make_shared<const StackSpec>(fast);
  const auto w = std::make_shared<const StackSpec>(slow);
  // Small: per-message costs dominate; large: the 1 Gbit/s cap under the 10 Gbit/s link.
  EXPECT_GT(allreduce_ns(t, w, 16), allreduce_ns(t, f, 16) + 20'000);
  const double big_fast = allreduce_ns(t, f, 64 << 20);
  const double big_slow = allreduce_ns(t, w, 64 << 20);
  EXPECT_GT(big_slow, 5 * big_fast);
}

// NCCL's socket transport: one TCP socket per connection at the rate a nccl-tests run measured
// (16.5 Gbit/s), one connection per NIC in NCCL 2.0 and two in 2.7 (channels doubled). On a
// 100 Gbit/s link a large allreduce across nodes runs at the sockets' rate, not the link's.
TEST(Stack, NcclSocketStacksCapEachConnectionAtTheMeasuredRate) {
  struct Case {
    const char* name;
    int connections;
  };
  for (const Case& c : {Case{"nccl-2.0-socket", 1}, Case{"nccl-2.7-socket", 2},
                        Case{"horovod-0.9-nccl-2.0-socket", 1}}) {
    auto s = load_stack(c.name);
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_NEAR(s->library.connection_bandwidth * 8 / 1e9, 16.5, 1e-9) << c.name;
    EXPECT_EQ(s->library.connections, c.connections) << c.name;
    EXPECT_EQ(s->library.bandwidth_limit, "connection") << c.name;
    EXPECT_TRUE(contains(s->source_of("library.connection_gbps"), "issue #209")) << c.name;
  }
  auto ib = load_stack("nccl-2.7-ib");
  auto sock = load_stack("nccl-2.7-socket");
  ASSERT_TRUE(ib.ok() && sock.ok());
  const Topology t = nodes(4, 600, 100);
  const std::int64_t elements = 64 << 20;  // 256 MiB of fp32
  const double bytes = 4.0 * static_cast<double>(elements);
  const double over_ib = allreduce_ns(t, std::make_shared<const StackSpec>(*ib), elements, "ring");
  const double over_sockets =
      allreduce_ns(t, std::make_shared<const StackSpec>(*sock), elements, "ring");
  // A ring moves 2 (n-1)/n of the bytes through each node's link: at 2 x 16.5 Gbit/s.
  const double at_socket_rate = 2.0 * 3 / 4 * bytes * 8 / 33.0;
  EXPECT_GT(over_sockets, at_socket_rate);
  EXPECT_LT(over_sockets, 1.2 * at_socket_rate);
  EXPECT_GT(over_sockets, 2.5 * over_ib);
}

TEST(Stack, NcclChoosesTreeForSmallAndRingForLargeAcrossManyNodes) {
  auto s = load_stack("nccl-2.7-ib");
  ASSERT_TRUE(s.ok()) << s.error().message;
  Topology t = nodes(16, 600, 100);
  ExchangeConfig c;
  c.stack = std::make_shared<const StackSpec>(*s);
  auto m = make_comm_model(t, c);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ((*m)->algorithm_for(256), "tree");
  EXPECT_EQ((*m)->algorithm_for(64 << 20), "ring");
  EXPECT_FALSE((*m)->protocol_for(256).empty());
}

TEST(Stack, MeasuredCurvesAreRefusedWithAStack) {
  auto s = load_stack("openmpi-4.1-tcp");
  ASSERT_TRUE(s.ok());
  ExchangeConfig c;
  c.algorithm = "measured";
  c.stack = std::make_shared<const StackSpec>(*s);
  EXPECT_FALSE(make_comm_model(nodes(2, 15'000, 10), c).ok());
}

TEST(Stack, OverlapPoliciesOfFrameworksParse) {
  auto b = parse_overlap("bucket:25,1");
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(b->bucket_bytes, 25 << 20);
  EXPECT_EQ(b->first_bucket_bytes, 1 << 20);
  auto f = parse_overlap("fusion:64,5");
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->kind, OverlapPolicy::Kind::kFusion);
  EXPECT_EQ(f->bucket_bytes, 64 << 20);
  EXPECT_NEAR(static_cast<double>(f->cycle), 5e6, 1);
  EXPECT_FALSE(parse_overlap("fusion:64").ok());
}

// Every size and cycle of a grouping is range-checked before it becomes an integer: beyond the
// ranges (1 byte to 2^30 MiB; 1 ns to 1e9 ms) is an error naming the policy, never a wrapped
// negative size that would be priced as another policy.
TEST(Stack, OverlapSizesAndCyclesAreRangeChecked) {
  for (const char* ok : {"bucket:1073741824", "bucket:0.00000096", "bucket:25,1073741824",
                         "fusion:64,0.000001", "fusion:1073741824,999999999"}) {
    auto p = parse_overlap(ok);
    ASSERT_TRUE(p.ok()) << ok << ": " << p.error().message;
    EXPECT_GT(p->bucket_bytes, 0) << ok;
    EXPECT_GE(p->first_bucket_bytes, 0) << ok;
    EXPECT_GE(p->cycle, 0) << ok;
  }
  for (const char* bad :
       {"bucket:1e13", "bucket:1073741825", "bucket:1e-7", "bucket:25,1e300", "fusion:1e13,5",
        "fusion:64,1e13", "fusion:64,1e-7", "bucket:nan", "fusion:64,inf"}) {
    auto p = parse_overlap(bad);
    ASSERT_FALSE(p.ok()) << bad << " gave " << p->name();
    EXPECT_TRUE(contains(p.error().message, std::string("overlap '") + bad + "'"))
        << p.error().message;
  }
  // A stack file's grouping goes through the same check, named by file and field.
  auto s = parse_stack_json(
      R"({"schema": "dagsgd-stack/1", "name": "x", "description": "d", "base": "nccl-2.7-ib",)"
      R"( "framework": {"name": "f",)"
      R"( "grouping": {"value": "bucket:1e13", "source": "s"}}})",
      "big-bucket.json");
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.error().message, "big-bucket.json")) << s.error().message;
  EXPECT_TRUE(contains(s.error().message, "grouping")) << s.error().message;
}

// The groups `stack`'s framework makes of `layers` (every gradient ready at once).
std::vector<GradientGroup> framework_groups(const StackSpec& stack,
                                            const std::vector<LayerTime>& layers) {
  EXPECT_TRUE(stack.framework.has_value()) << stack.name;
  auto policy = parse_overlap(stack.framework ? stack.framework->grouping : "");
  EXPECT_TRUE(policy.ok()) << stack.name;
  return policy.ok() ? make_groups(layers, *policy, [](std::int64_t) { return Nanos{0}; })
                     : std::vector<GradientGroup>{};
}

// The scripts the published measurements ran (docs/published.md): DLE BERT pre-training's
// apex DDP (message_size 250 M elements) keeps BERT-base's 110 M gradients in one bucket, apex's
// default 10 M-element buckets split them, TF 2.3 Keras all-reduces once after backward.
TEST(Stack, DeepLearningExamplesAndKerasGroupingsFollowTheirScripts) {
  // 13 layers of 8.5 M gradient elements: 110.5 M, about BERT-base.
  const std::vector<LayerTime> bert(13, LayerTime{1000, 2000, 8'500'000});
  auto one = load_stack("apex-ddp-bert-nccl-2.7-ib");
  ASSERT_TRUE(one.ok()) << one.error().message;
  EXPECT_EQ(framework_groups(*one, bert).size(), 1u);
  EXPECT_TRUE(contains(one->source_of("framework.grouping"), "message_size=250000000"));
  auto apex = load_stack("apex-ddp-nccl-2.7-ib");
  ASSERT_TRUE(apex.ok()) << apex.error().message;
  // A bucket closes at 10 M elements: two layers each, the last layer alone.
  EXPECT_EQ(framework_groups(*apex, bert).size(), 7u);
  for (const char* name : {"tf-2.3-keras-nccl-2.7-ib", "pytorch-ddp-onebucket-nccl-2.7-ib"}) {
    auto s = load_stack(name);
    ASSERT_TRUE(s.ok()) << s.error().message;
    const auto groups = framework_groups(*s, bert);
    ASSERT_EQ(groups.size(), 1u) << name;
    EXPECT_EQ(groups[0].elements, 13 * 8'500'000) << name;
  }
}

// Under AMP, apex amp O1 and Keras' mixed_float16 keep float32 parameters, so their gradients go
// on the wire in float32; DLE BERT pre-training (model.half()) overrides its DDP base back to
// the scenario's float16.
TEST(Stack, MixedPrecisionGradientBytesFollowTheFramework) {
  const Topology t = nodes(4, 600, 96);
  auto fp16_ns = [&](const char* name) {
    auto s = load_stack(name);
    EXPECT_TRUE(s.ok()) << name;
    ExchangeConfig c;
    c.precision = Precision::kFp16;
    c.stack = std::make_shared<const StackSpec>(*s);
    auto m = make_comm_model(t, c);
    EXPECT_TRUE(m.ok()) << name;
    return m.ok() ? static_cast<double>((*m)->exchange_time(25'000'000)) : 0.0;
  };
  auto lib = load_stack("nccl-2.7-ib");
  ASSERT_TRUE(lib.ok());
  const auto nccl = std::make_shared<const StackSpec>(*lib);
  ExchangeConfig fp32;
  fp32.stack = nccl;
  auto m32 = make_comm_model(t, fp32);
  ASSERT_TRUE(m32.ok());
  const double as_fp32 = static_cast<double>((*m32)->exchange_time(25'000'000));
  EXPECT_DOUBLE_EQ(fp16_ns("apex-ddp-o1-nccl-2.7-ib"), as_fp32);
  EXPECT_DOUBLE_EQ(fp16_ns("tf-2.3-keras-nccl-2.7-ib"), as_fp32);
  EXPECT_LT(fp16_ns("pytorch-ddp-onebucket-nccl-2.7-ib"), 0.6 * as_fp32);
  EXPECT_LT(fp16_ns("apex-ddp-bert-nccl-2.7-ib"), 0.6 * as_fp32);
}

// Latencies the stack itself gives on `link`, at 2, 4 and 8 ranks one per node.
std::vector<TimingSeries> benchmark(const StackSpec& s, const LinkCost& link,
                                    const BenchmarkSetup& setup) {
  std::vector<TimingSeries> out;
  for (int p : {2, 4, 8}) {
    TimingSeries ts;
    ts.ranks = p;
    for (Bytes b = 4; b <= (4 << 20); b *= 2) {
      auto t = stack_benchmark_time(s, link, link, setup, p, static_cast<double>(b));
      EXPECT_TRUE(t.ok()) << t.error().message;
      ts.points.push_back({b, t.ok() ? t->nanos : 1});
    }
    out.push_back(std::move(ts));
  }
  return out;
}

TEST(TransferCalibration, RecoversPerMessageCostAndConnectionRate) {
  auto base = load_stack("openmpi-4.1-tcp");
  ASSERT_TRUE(base.ok()) << base.error().message;
  ASSERT_EQ(base->library.bandwidth_limit, "connection");
  StackSpec truth = *base;
  truth.library.per_message_ns = 12'000;
  truth.library.connection_bandwidth = 3e9 / 8;  // 3 Gbit/s per TCP stream
  truth.library.rendezvous_ns = 0;
  LinkCost link;
  link.alpha_ns = 15'000;
  link.beta_ns_per_byte = 8 / 9.4;
  StackCalibrationOptions o;
  o.fit_step = false;
  auto r = calibrate_stack(benchmark(truth, link, o.setup), link, link, *base, o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->link_class, "inter");
  EXPECT_TRUE(r->capped);
  EXPECT_NEAR(r->stack.library.per_message_ns, 12'000, 120);
  EXPECT_NEAR(r->stack.library.connection_bandwidth * 8 / 1e9, 3.0, 0.03);
  EXPECT_LT(r->rms_relative, 0.01);
  EXPECT_EQ(r->stack.source_of("library.per_message_us"), "transfer calibration");
  // The framework of the base is kept, not the benchmark's view of it.
  EXPECT_EQ(r->stack.framework, base->framework);
}

// `base` fitted, without a step, to the latencies `truth` gives on a 100 Gbit/s link.
Expected<StackCalibrationResult> fit_on_100g(const StackSpec& truth, const StackSpec& base) {
  LinkCost link;
  link.alpha_ns = 600;
  link.beta_ns_per_byte = 8 / 100.0;
  StackCalibrationOptions o;
  o.fit_step = false;
  return calibrate_stack(benchmark(truth, link, o.setup), link, link, base, o);
}

// A nccl-tests log over the user's own sockets replaces the bundled per-socket rate.
TEST(TransferCalibration, RecoversASocketStacksConnectionRate) {
  auto base = load_stack("nccl-2.7-socket");
  ASSERT_TRUE(base.ok()) << base.error().message;
  StackSpec truth = *base;
  truth.library.connection_bandwidth = 9e9 / 8;  // 9 Gbit/s per socket, two per NIC
  auto r = fit_on_100g(truth, *base);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->capped);
  EXPECT_NEAR(r->stack.library.connection_bandwidth * 8 / 1e9, 9.0, 0.2);
  EXPECT_EQ(r->stack.library.connections, 2);
  EXPECT_LT(r->rms_relative, 0.02);
}

TEST(TransferCalibration, RecoversAnEfficiencyOnAnotherLink) {
  auto base = load_stack("nccl-2.7-ib");
  ASSERT_TRUE(base.ok()) << base.error().message;
  ASSERT_EQ(base->library.bandwidth_limit, "efficiency");
  StackSpec truth = *base;
  truth.library.efficiency = 0.7;
  auto r = fit_on_100g(truth, *base);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_NEAR(r->stack.library.efficiency, 0.7, 0.01);
  EXPECT_LT(r->rms_relative, 0.02);
}

// A shaped link (FabricSpec::burst_bytes): after idling it passes its burst without waiting.
// Open MPI's libnbc sums 32 KiB on 4 ranks with a binomial tree, 4 serial 32 KiB transfers of
// which no port carries more than 2: under an 80 KiB burst none of them waits for the rate.
// Latencies made on such a link give back the stack's per-message cost when the fit knows the
// burst; fitted as a plain link, the burst's free bytes hide most of that cost.
TEST(TransferCalibration, SeparatesAShapersBurstFromThePerMessageCost) {
  auto base = load_stack("openmpi-4.1-tcp");
  ASSERT_TRUE(base.ok()) << base.error().message;
  base->library.bandwidth_limit = "efficiency";
  StackSpec truth = *base;
  truth.library.per_message_ns = 2e6;
  truth.library.efficiency = 0.8;
  truth.library.rendezvous_ns = 0;
  LinkCost shaped;
  shaped.alpha_ns = 8'200;
  shaped.beta_ns_per_byte = 8 / 0.1;  // 100 Mbit/s
  shaped.burst_bytes = 81'920;
  LinkCost plain = shaped;
  plain.burst_bytes = 0;
  StackCalibrationOptions o;
  o.fit_step = false;
  o.setup.call = "iallreduce_in_place";
  auto with = stack_benchmark_time(truth, shaped, shaped, o.setup, 4, 32768);
  auto without = stack_benchmark_time(truth, plain, plain, o.setup, 4, 32768);
  ASSERT_TRUE(with.ok() && without.ok());
  EXPECT_EQ(with->algorithm, "binomial");
  EXPECT_NEAR(without->nanos - with->nanos, 4 * 32768 * 80 / 0.8, 1);
  // Above the burst only the first 80 KiB of each port go free.
  auto big_with = stack_benchmark_time(truth, shaped, shaped, o.setup, 4, 8 << 20);
  auto big_without = stack_benchmark_time(truth, plain, plain, o.setup, 4, 8 << 20);
  ASSERT_TRUE(big_with.ok() && big_without.ok());
  EXPECT_GT(big_without->nanos - big_with->nanos, 0);
  EXPECT_LT(big_without->nanos - big_with->nanos, 0.01 * big_without->nanos);

  std::vector<TimingSeries> series;
  for (int p : {2, 4}) {
    TimingSeries ts;
    ts.ranks = p;
    for (Bytes b = 1024; b <= (8 << 20); b *= 2) {
      auto t = stack_benchmark_time(truth, shaped, shaped, o.setup, p, static_cast<double>(b));
      ASSERT_TRUE(t.ok()) << t.error().message;
      ts.points.push_back({b, t->nanos});
    }
    series.push_back(std::move(ts));
  }
  auto knows = calibrate_stack(series, shaped, shaped, *base, o);
  ASSERT_TRUE(knows.ok()) << knows.error().message;
  EXPECT_NEAR(knows->stack.library.per_message_ns, 2e6, 2e4);
  EXPECT_NEAR(knows->stack.library.efficiency, 0.8, 0.01);
  EXPECT_LT(knows->rms_relative, 0.01);
  auto blind = calibrate_stack(series, plain, plain, *base, o);
  ASSERT_TRUE(blind.ok()) << blind.error().message;
  EXPECT_LT(blind->stack.library.per_message_ns, 0.8 * 2e6);
  EXPECT_GT(blind->rms_relative, 10 * knows->rms_relative);
}

TEST(TransferCalibration, RefusesTooFewSizesAndMixedLinks) {
  auto base = load_stack("openmpi-4.1-tcp");
  ASSERT_TRUE(base.ok());
  LinkCost link;
  link.alpha_ns = 15'000;
  link.beta_ns_per_byte = 1;
  TimingSeries two;
  two.ranks = 2;
  two.points = {{8, 30'000}, {16, 31'000}};
  auto r = calibrate_stack({two}, link, link, *base, {});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.error().message, "3 distinct")) << r.error().message;

  StackCalibrationOptions one_node;
  one_node.setup.ranks_per_node = 2;
  TimingSeries a = two;
  a.points.push_back({32, 32'000});
  TimingSeries b = a;
  b.ranks = 4;
  auto mixed = calibrate_stack({a, b}, link, link, *base, one_node);
  ASSERT_FALSE(mixed.ok());
  EXPECT_TRUE(contains(mixed.error().message, "one link")) << mixed.error().message;
}

}  // namespace
}  // namespace dagsgd::model
