// The compact S-SGD DAG describes exactly the DAG build_ssgd_dag builds, and the size limit says
// how large a job is and why it is refused.
#include <gtest/gtest.h>

#include <random>

#include "common/random_ssgd.h"
#include "dagsgd/model/ssgd.h"

namespace dagsgd {
namespace {

using model::TaskId;

TEST(SsgdDag, EveryTaskEqualsTheExplicitDag) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 200; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const model::SsgdConfig c = testing::random_ssgd_config(rng);
    const model::SsgdDag compact(c);
    const model::Dag full = model::build_ssgd_dag(c);
    ASSERT_EQ(compact.task_count(), full.task_count());
    EXPECT_EQ(compact.edge_count(), full.edge_count());
    for (std::size_t i = 0; i < full.task_count(); ++i) {
      const auto id = static_cast<TaskId>(i);
      const model::Task a = compact.task(id);
      const model::Task& b = full.task(id);
      EXPECT_EQ(a.duration, b.duration) << i;
      EXPECT_EQ(a.resource, b.resource) << i;
      EXPECT_EQ(a.worker, b.worker) << i;
      EXPECT_EQ(a.layer, b.layer) << i;
      EXPECT_EQ(a.iteration, b.iteration) << i;
      EXPECT_EQ(a.kind, b.kind) << i;
      EXPECT_EQ(compact.describe(id), full.describe(id));
      const auto p = compact.place(id);
      EXPECT_EQ(p.worker < 0 ? compact.comm_id(p.iteration, p.position)
                             : compact.task_id(p.iteration, p.worker, p.position),
                id);
      if (p.worker >= 0 && a.kind == model::TaskKind::kBackward) {
        // The collective a backward task triggers is its successor in the explicit DAG.
        const int g = compact.triggered_group(p.position);
        bool joins = false;
        for (const TaskId* s = full.succ_begin(id); s != full.succ_end(id); ++s) {
          joins = joins || full.task(*s).kind == model::TaskKind::kComm;
        }
        EXPECT_EQ(g >= 0, joins) << i;
        if (g >= 0) {
          EXPECT_EQ(c.groups[static_cast<std::size_t>(g)].first, a.layer);
        }
      }
    }
  }
}

TEST(SsgdDag, SizeLimitNamesTheSizeAndTheReason) {
  // ResNet-50 (174 layers) on 131,072 GPUs: 138 million tasks, within the limit.
  auto ok = model::ssgd_task_count(131072, 174, 161, 3);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 3 * (std::int64_t{131072} * 351 + 161));
  // 800,000 GPUs, and one node of 2^31-1 GPUs: refused, saying how large.
  auto big = model::ssgd_task_count(800000, 174, 0, 3);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().message.rfind("800,000 workers x 351 tasks x 3 iterations is "
                                      "842,400,000 tasks to simulate, more than the "
                                      "536,870,912",
                                      0),
            0u)
      << big.error().message;
  auto huge = model::ssgd_task_count(2147483647, 174, 0, 3);
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.error().message.find("2,147,483,647 workers"), std::string::npos)
      << huge.error().message;
  EXPECT_NE(huge.error().message.find("use fewer GPUs or iterations"), std::string::npos);
  // A product beyond 64 bits is still a clear refusal.
  EXPECT_FALSE(model::ssgd_task_count(std::int64_t{1} << 40, std::int64_t{1} << 30, 0, 1000).ok());
}

}  // namespace
}  // namespace dagsgd
