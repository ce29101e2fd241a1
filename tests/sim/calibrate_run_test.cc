// A calibration from names (sim::run_calibration): the settings checked with messages that name
// each setting by its flag, the notes on where rank counts came from, both kinds of fit.
#include <gtest/gtest.h>

#include "common/text.h"
#include "dagsgd/sim/calibrate_run.h"

namespace dagsgd::sim {
namespace {

const std::string kLogs = std::string(DAGSGD_SHARED_DATA) + "/published/b-caffe/";

const model::HardwareCatalog& catalog() {
  static const model::HardwareCatalog c = *model::HardwareCatalog::load_default();
  return c;
}

using dagsgd::testing::contains;

// The request's error (an empty string when it succeeds).
std::string error_of(const CalibrationRequest& r) {
  std::vector<std::string> notes;
  auto run = run_calibration(r, catalog(), notes);
  return run ? std::string() : run.error().message;
}

TEST(CalibrationRun, MessagesNameTheSettingByItsFlag) {
  CalibrationRequest r;
  r.logs = {kLogs + "allreduce4.log"};
  r.algorithm = "butterfly";
  EXPECT_TRUE(contains(error_of(r), "unknown --algorithm 'butterfly'")) << error_of(r);
  EXPECT_TRUE(contains(error_of(r), "recursive_doubling")) << error_of(r);

  CalibrationRequest several;
  several.logs = {kLogs + "allreduce2.log", kLogs + "allreduce4.log"};
  several.ranks = 2;
  EXPECT_TRUE(contains(error_of(several), "--ranks applies to one log")) << error_of(several);
}

TEST(CalibrationRun, StackFitNeedsItsLinkAndRefusesFabricSettings) {
  CalibrationRequest r;
  r.logs = {kLogs + "allreduce4.log"};
  r.stack = "openmpi-4.1-tcp";
  EXPECT_TRUE(contains(error_of(r), "--stack needs --link")) << error_of(r);
  r.link = "10gbe";
  r.given = {"--scope"};
  EXPECT_TRUE(contains(error_of(r), "--scope applies to a fabric fit")) << error_of(r);
  r.given.clear();
  r.call = "bcast";
  EXPECT_TRUE(contains(error_of(r), "--call: unknown call 'bcast'")) << error_of(r);

  CalibrationRequest fabric;
  fabric.logs = {kLogs + "allreduce4.log"};
  fabric.given = {"--link"};
  EXPECT_TRUE(contains(error_of(fabric), "--link applies to a stack fit")) << error_of(fabric);
}

TEST(CalibrationRun, FabricFitSaysWhereTheRankCountCameFrom) {
  CalibrationRequest r;
  r.logs = {kLogs + "allreduce4.log"};
  std::vector<std::string> notes;
  auto run = run_calibration(r, catalog(), notes);
  ASSERT_TRUE(run.ok()) << run.error().message;
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_TRUE(contains(notes[0], "note: --ranks not given; using 4 from the file name"))
      << notes[0];
  ASSERT_TRUE(run->fabric.has_value());
  EXPECT_FALSE(run->stack.has_value());
  EXPECT_EQ(run->fabric->ranks, std::vector<int>{4});
  EXPECT_TRUE(contains(run->entry_json(), "\"name\": \"allreduce4\"")) << run->entry_json();
  // The entry's source is the command that reproduces it.
  EXPECT_TRUE(contains(run->entry_json(), "--ranks 4 --algorithm ring")) << run->entry_json();
}

TEST(CalibrationRun, StackFitOnAKnownLinkAndNotesSurviveAnError) {
  CalibrationRequest r;
  r.logs = {kLogs + "allreduce2.log", kLogs + "allreduce4.log"};
  r.stack = "openmpi-4.1-tcp";
  r.link = "10gbe";
  r.name = "site";
  std::vector<std::string> notes;
  auto run = run_calibration(r, catalog(), notes);
  ASSERT_TRUE(run.ok()) << run.error().message;
  ASSERT_TRUE(run->stack.has_value());
  EXPECT_EQ(run->stack->fit.stack.name, "site");
  EXPECT_TRUE(contains(run->entry_json(), "dagsgd-stack/1")) << run->entry_json();
  EXPECT_EQ(notes.size(), 2u);

  r.link = "7gbe";
  notes.clear();
  auto unknown = run_calibration(r, catalog(), notes);
  ASSERT_FALSE(unknown.ok());
  EXPECT_TRUE(contains(unknown.error().message, "link: unknown fabric '7gbe'"))
      << unknown.error().message;
  EXPECT_EQ(notes.size(), 2u) << "the logs were read before the link was looked up";
}

}  // namespace
}  // namespace dagsgd::sim
