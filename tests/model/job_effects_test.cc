// The job-effects file (every key checked, errors naming the file and the key) and the straggler
// model's expected maximum against hand-computed values.
#include "dagsgd/model/job_effects.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/text.h"

namespace dagsgd::model {
namespace {

using dagsgd::testing::contains;

TEST(ExpectedMaxNormal, MatchesTheClosedFormsAndTables) {
  EXPECT_EQ(expected_max_normal(1), 0);
  // E[max of 2] = 1/sqrt(pi), of 3 = 3/(2 sqrt(pi)) (David and Nagaraja, Order Statistics,
  // 3rd ed., 2003, section 3.2).
  const double sqrt_pi = std::sqrt(M_PI);
  EXPECT_NEAR(expected_max_normal(2), 1 / sqrt_pi, 1e-9);
  EXPECT_NEAR(expected_max_normal(3), 1.5 / sqrt_pi, 1e-9);
  // Harter (1961), "Expected values of normal order statistics", Biometrika 48: 5 draws
  // 1.16296, 10 draws 1.53875, 100 draws 2.50759.
  EXPECT_NEAR(expected_max_normal(5), 1.16296, 1e-5);
  EXPECT_NEAR(expected_max_normal(10), 1.53875, 1e-5);
  EXPECT_NEAR(expected_max_normal(100), 2.50759, 1e-5);
  // It grows with the ranks, slower and slower (about sqrt(2 ln n)).
  EXPECT_LT(expected_max_normal(1024), expected_max_normal(131072));
  EXPECT_LT(expected_max_normal(131072), std::sqrt(2 * std::log(131072.0)));
}

TEST(ExpectedMaxNormal, StragglerFactorOfKnownNoise) {
  // Two ranks with 10% noise: the slower one's compute is 1 + 0.1/sqrt(pi) of the mean.
  EXPECT_NEAR(straggler_factor(0.1, 2), 1 + 0.1 / std::sqrt(M_PI), 1e-9);
  EXPECT_EQ(straggler_factor(0.1, 1), 1);
  EXPECT_EQ(straggler_factor(0, 64), 1);
}

TEST(JobEffectsFile, ReadsBothSections) {
  auto e = parse_job_effects(R"({"format": "dagsgd-job-effects", "version": 1,
      "source": "nccl_data.json.gz",
      "interference": {"compute_slowdown": 1.07, "samples": 412},
      "noise": {"iteration_cv": 0.012, "iterations": 3, "ranks": 2}})",
                             "e.json");
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->source, "nccl_data.json.gz");
  ASSERT_TRUE(e->interference && e->noise);
  EXPECT_EQ(e->interference->compute_slowdown, 1.07);
  EXPECT_EQ(e->interference->samples, 412);
  EXPECT_EQ(e->noise->iteration_cv, 0.012);
  EXPECT_EQ(e->noise->iterations, 3);
  EXPECT_EQ(e->noise->ranks, 2);
  auto only_noise = parse_job_effects(
      R"({"format": "dagsgd-job-effects", "version": 1, "noise": {"iteration_cv": 0}})", "n");
  ASSERT_TRUE(only_noise.ok()) << only_noise.error().message;
  EXPECT_FALSE(only_noise->interference);
}

TEST(JobEffectsFile, BadKeysAndValuesNameTheFileAndTheKey) {
  const std::string head = R"({"format": "dagsgd-job-effects", "version": 1, )";
  for (const auto& [body, key] : std::initializer_list<std::pair<const char*, const char*>>{
           {R"("extra": 1})", "'extra'"},
           {R"("noise": {"cv": 0.1}})", "'noise.cv'"},
           {R"("noise": {"iteration_cv": 1.5}})", "'noise.iteration_cv'"},
           {R"("noise": {"iteration_cv": -0.1}})", "'noise.iteration_cv'"},
           {R"("noise": {"iteration_cv": "0.1"}})", "'noise.iteration_cv'"},
           {R"("noise": {"ranks": 2.5}})", "'noise.ranks'"},
           {R"("interference": {"compute_slowdown": 0.9}})", "'interference.compute_slowdown'"},
           {R"("interference": {"compute_slowdown": 11}})", "'interference.compute_slowdown'"},
           {R"("interference": 3})", "'interference'"}}) {
    auto e = parse_job_effects(head + body, "job effects 'e.json'");
    ASSERT_FALSE(e.ok()) << body;
    EXPECT_TRUE(contains(e.error().message, "job effects 'e.json'")) << e.error().message;
    EXPECT_TRUE(contains(e.error().message, key)) << e.error().message;
  }
  EXPECT_FALSE(parse_job_effects(R"({"format": "x", "version": 1})", "f").ok());
  EXPECT_FALSE(parse_job_effects(R"({"format": "dagsgd-job-effects", "version": 2})", "f").ok());
  EXPECT_FALSE(parse_job_effects("{", "f").ok());
  EXPECT_FALSE(load_job_effects("/nonexistent/effects.json").ok());
}

TEST(JobEffectsFile, TheBundledMeasurementLoads) {
  auto e = load_default_job_effects();
  ASSERT_TRUE(e.ok()) << e.error().message;
  ASSERT_TRUE(e->noise);
  EXPECT_GT(e->noise->iteration_cv, 0);
  EXPECT_LT(e->noise->iteration_cv, 0.1);
  EXPECT_FALSE(e->source.empty());
}

TEST(EffectSwitches, NamesSwitchEffectsOff) {
  EXPECT_TRUE(parse_effects_off("")->stragglers);
  EXPECT_FALSE(parse_effects_off("stragglers")->stragglers);
  EXPECT_TRUE(parse_effects_off("stragglers")->copies);
  EXPECT_FALSE(parse_effects_off("copies,stragglers")->copies);
  EXPECT_TRUE(parse_effects_off("copies,stragglers")->interference);
  EXPECT_FALSE(parse_effects_off("interference")->interference);
  EXPECT_TRUE(parse_effects_off("interference")->stragglers);
  auto bad = parse_effects_off("stragglers,wind");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(contains(bad.error().message, "'wind'")) << bad.error().message;
  EXPECT_TRUE(contains(bad.error().message, "stragglers")) << bad.error().message;
  EXPECT_TRUE(contains(bad.error().message, "interference")) << bad.error().message;
}

}  // namespace
}  // namespace dagsgd::model
