// The job-effects file analyze writes (docs/formats.md): exactly the shared schema's keys, values
// inside the reader's ranges, and a section left out when the trace could not give it.
#include "dagsgd/reports/job_effects_report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

namespace dagsgd::reports {
namespace {

using nlohmann::json;

sim::JobEffects measured() {
  sim::JobEffects e;
  e.interference = {.slowdown = 1.07, .seen = 2000, .samples = 412, .alone = 900, .kernels = 31};
  e.comm_slowdown = {.slowdown = 1.2, .seen = 40, .samples = 20};
  e.noise = {.iteration_cv = 0.012,
             .rank_cv = 0.01,
             .iterations = 3,
             .ranks = 2,
             .samples = 6,
             .mean = 50000000};
  return e;
}

std::set<std::string> keys(const json& j) {
  std::set<std::string> out;
  for (const auto& [k, v] : j.items()) out.insert(k);
  return out;
}

// The schema: the reader's keys, types and ranges, and nothing else.
void expect_schema(const json& j) {
  EXPECT_EQ(j.at("format"), "dagsgd-job-effects");
  EXPECT_EQ(j.at("version"), 1);
  EXPECT_TRUE(j.at("source").is_string());
  for (const auto& k : keys(j)) {
    EXPECT_TRUE(k == "format" || k == "version" || k == "source" || k == "interference" ||
                k == "noise")
        << k;
  }
  if (j.contains("interference")) {
    const json& i = j["interference"];
    EXPECT_EQ(keys(i), (std::set<std::string>{"compute_slowdown", "samples"}));
    const double s = i.at("compute_slowdown").get<double>();
    EXPECT_TRUE(std::isfinite(s) && s >= 1 && s <= 10) << s;
    EXPECT_TRUE(i.at("samples").is_number_integer());
  }
  if (j.contains("noise")) {
    const json& n = j["noise"];
    EXPECT_EQ(keys(n), (std::set<std::string>{"iteration_cv", "iterations", "ranks"}));
    const double cv = n.at("iteration_cv").get<double>();
    EXPECT_TRUE(std::isfinite(cv) && cv >= 0 && cv <= 1) << cv;
    EXPECT_TRUE(n.at("iterations").is_number_integer());
    EXPECT_TRUE(n.at("ranks").is_number_integer());
  }
}

TEST(JobEffectsFile, BothSectionsAsTheSchemaSaysThem) {
  const json j = json::parse(job_effects_file(measured(), "a.json.gz b.json.gz"));
  expect_schema(j);
  EXPECT_EQ(j, json::parse(R"({"format": "dagsgd-job-effects", "version": 1,
    "source": "a.json.gz b.json.gz",
    "interference": {"compute_slowdown": 1.07, "samples": 412},
    "noise": {"iteration_cv": 0.012, "iterations": 3, "ranks": 2}})"));
}

TEST(JobEffectsFile, WhatWasNotMeasuredIsLeftOut) {
  const json j = json::parse(job_effects_file(sim::JobEffects{}, "t.json"));
  expect_schema(j);
  EXPECT_FALSE(j.contains("interference"));
  EXPECT_FALSE(j.contains("noise"));
  // Values the reader refuses are not written either.
  sim::JobEffects e = measured();
  e.interference.slowdown = 12;
  e.noise.iteration_cv = 1.5;
  const json out_of_range = json::parse(job_effects_file(e, "t.json"));
  expect_schema(out_of_range);
  EXPECT_FALSE(out_of_range.contains("interference"));
  EXPECT_FALSE(out_of_range.contains("noise"));
}

TEST(JobEffectsFile, OverlappedKernelsNoSlowerMeansNoSlowdown) {
  sim::JobEffects e = measured();
  e.interference.slowdown = 0.97;
  const json j = json::parse(job_effects_file(e, "t.json"));
  expect_schema(j);
  EXPECT_EQ(j["interference"]["compute_slowdown"], 1.0);
}

TEST(JobEffectsText, SaysWhatItCouldNotMeasure) {
  const std::string measured_text = job_effects_text(measured());
  EXPECT_NE(measured_text.find("Job effects"), std::string::npos);
  EXPECT_NE(measured_text.find("1.070x"), std::string::npos) << measured_text;
  EXPECT_NE(measured_text.find("cv 1.20%"), std::string::npos) << measured_text;
  const std::string empty = job_effects_text(sim::JobEffects{});
  EXPECT_NE(empty.find("Interference: compute kernels beside communication kernels on their "
                       "GPU: not measurable: the trace has no compute kernels"),
            std::string::npos)
      << empty;
  sim::JobEffects apart = measured();
  apart.interference = {.seen = 10};
  const std::string apart_text = job_effects_text(apart);
  EXPECT_NE(apart_text.find("not measurable: no compute kernel ran beside a communication kernel"),
            std::string::npos)
      << apart_text;
  EXPECT_NE(empty.find("needs 2 samples or more"), std::string::npos) << empty;
  EXPECT_EQ(empty.find("cv "), std::string::npos) << empty;
}

}  // namespace
}  // namespace dagsgd::reports
