// Shell command lines (command_line.h) and a command's output folders (output_files.h): what a
// report prints to rerun a command, and what a command checks and makes before it writes.
#include "dagsgd/model/command_line.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/temp.h"
#include "common/text.h"
#include "dagsgd/model/output_files.h"

namespace dagsgd::model {
namespace {

namespace fs = std::filesystem;
using dagsgd::testing::contains;

TEST(ShellWord, QuotesOnlyWhatTheShellWouldRead) {
  EXPECT_EQ(shell_word("--fabrics=10gbe,ib-edr"), "--fabrics=10gbe,ib-edr");
  EXPECT_EQ(shell_word("a b"), "'a b'");
  EXPECT_EQ(shell_word(""), "''");
  EXPECT_EQ(shell_word("$HOME"), "'$HOME'");
  EXPECT_EQ(shell_word("it's"), "'it'\\''s'");
}

TEST(ShellCommandLine, LeavesOutTheOutputOptionsInBothSpellings) {
  const std::vector<std::string> args = {"whatif",  "--out",   "dir",    "--network", "my net",
                                         "--force", "--out=x", "--gpus", "4"};
  EXPECT_EQ(shell_command_line("dagsgd", args, {"--out"}, {"--force"}),
            "dagsgd whatif --network 'my net' --gpus 4");
  EXPECT_EQ(shell_command_line("dagsgd", {"predict"}, {}, {}), "dagsgd predict");
}

TEST(OutputFiles, RefusesToReplaceWithoutForce) {
  const std::string dir = testing::fresh_test_dir("dagsgd-output-files");
  std::ofstream(dir + "/results.json") << "{}";
  auto refused = check_output_files(dir, {"results.json", "report.md"}, false);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(contains(refused.error().message, "results.json' exists")) << refused.error().message;
  EXPECT_TRUE(check_output_files(dir, {"results.json", "report.md"}, true).ok());
  // A file where a folder goes is refused, with --force too.
  std::ofstream(dir + "/timelines") << "";
  auto not_dir = check_output_files(dir, {"timelines/a.json"}, true);
  ASSERT_FALSE(not_dir.ok());
  EXPECT_TRUE(contains(not_dir.error().message, "is not a directory")) << not_dir.error().message;
}

TEST(OutputFiles, MakesTheFoldersAndSaysWhichInnermostFirst) {
  const std::string base = testing::fresh_test_dir("dagsgd-output-folders");
  const std::string dir = base + "/a/b";
  auto made = make_output_folders(dir, {"report.md", "timelines/t.json"});
  ASSERT_TRUE(made.ok()) << made.error().message;
  EXPECT_TRUE(fs::is_directory(dir + "/timelines"));
  const std::vector<std::string> expected = {dir + "/timelines", dir, base + "/a"};
  EXPECT_EQ(*made, expected);
  // Removing them in that order leaves what was there before.
  for (const auto& d : *made) EXPECT_TRUE(fs::remove(d)) << d;
  EXPECT_TRUE(fs::is_directory(base));
  auto again = make_output_folders(base, {"x.json"});
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->empty());
}

}  // namespace
}  // namespace dagsgd::model
