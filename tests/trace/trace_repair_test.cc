// Repairing traces whose writer died: every complete event survives, the result is valid JSON.
#include "dagsgd/trace/trace_repair.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace dagsgd::trace {
namespace {

const std::string kHeader =
    "{\"schemaVersion\":1,\"distributedInfo\":{\"rank\":0},\"traceEvents\":[\n";
const std::string kE1 = "{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":2}";
const std::string kE2 = "{\"ph\":\"X\",\"name\":\"b\",\"ts\":3,\"dur\":4,\"args\":{\"s\":\"},\"}}";

std::size_t events_in(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << text;
  return j.is_discarded() ? 0 : j["traceEvents"].size();
}

TEST(TraceRepair, CompleteTraceIsUnchanged) {
  std::string text = kHeader + kE1 + ",\n" + kE2 + "\n]}\n";
  auto r = repair_truncated_trace(text, "t");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->repaired);
  EXPECT_EQ(r->text, text);
}

TEST(TraceRepair, KeepsEveryCompleteEvent) {
  // As a flush leaves it: the last event complete, no closing bracket.
  auto r = repair_truncated_trace(kHeader + kE1 + ",\n" + kE2, "t");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->repaired);
  EXPECT_EQ(events_in(r->text), 2u);
  EXPECT_EQ(r->dropped_bytes, 0);
}

TEST(TraceRepair, DropsAPartialLastEvent) {
  for (std::size_t cut = 1; cut < kE2.size(); ++cut) {
    std::string text = kHeader + kE1 + ",\n" + kE2.substr(0, cut);
    auto r = repair_truncated_trace(text, "t");
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(events_in(r->text), 1u) << "cut at " << cut;
    EXPECT_EQ(r->dropped_bytes, static_cast<std::int64_t>(cut));
  }
}

TEST(TraceRepair, HeaderOnlyGivesEmptyTrace) {
  auto r = repair_truncated_trace(kHeader, "t");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(events_in(r->text), 0u);
  r = repair_truncated_trace(kHeader + kE1.substr(0, 5), "t");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(events_in(r->text), 0u);
}

TEST(TraceRepair, CutHeaderIsAnErrorNamingTheFile) {
  auto r = repair_truncated_trace("{\"schemaVersion\":1,\"distrib", "rank-3.trace.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("rank-3.trace.json"), std::string::npos);
}

}  // namespace
}  // namespace dagsgd::trace
