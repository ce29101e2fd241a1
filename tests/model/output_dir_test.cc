// Writes into an output folder: atomic replacement, never through a link out of the folder,
// removal of only what a command writes, and one writer per folder at a time.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "common/temp.h"
#include "dagsgd/model/io.h"

namespace dagsgd::model {
namespace {

namespace fs = std::filesystem;

std::string file_text_of(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(OutputDir, WriteReplacesWholeFilesAndLeavesNothingBeside) {
  const std::string dir = testing::fresh_test_dir("output-dir");
  const std::string f = dir + "/report.html";
  ASSERT_TRUE(write_file(f, "old", false).ok());
  ASSERT_TRUE(write_file(f, "new and longer", true).ok());
  EXPECT_EQ(file_text_of(f), "new and longer");
  // A write that cannot finish leaves the previous file whole: the bytes go beside first.
  fs::create_directory(f + ".dagsgd-tmp-" + std::to_string(::getpid()));
  EXPECT_FALSE(write_file(f, "lost", true).ok());
  EXPECT_EQ(file_text_of(f), "new and longer");
  fs::remove(f + ".dagsgd-tmp-" + std::to_string(::getpid()));
  // A directory where the file goes is an error, even with force.
  fs::create_directory(dir + "/d");
  EXPECT_FALSE(write_file(dir + "/d", "x", true).ok());
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 1U);
}

TEST(OutputDir, NeverThroughALinkOutOfTheFolder) {
  const std::string dir = testing::fresh_test_dir("output-dir");
  const std::string out = dir + "/out";
  const std::string elsewhere = dir + "/elsewhere";
  fs::create_directories(out);
  fs::create_directories(elsewhere);
  fs::create_directory_symlink(elsewhere, out + "/timelines");
  for (const char* rel : {"timelines/a.json", "timelines/deeper/a.json"}) {
    auto w = write_output_file(out, rel, "x", true);
    ASSERT_FALSE(w.ok()) << rel;
    EXPECT_NE(w.error().message.find("'" + out + "/timelines' is a link"), std::string::npos)
        << w.error().message;
  }
  EXPECT_FALSE(check_output_path(out, "../x/y.json").ok());
  EXPECT_TRUE(check_output_path(out, "new/folder/y.json").ok()) << "made later";
  EXPECT_TRUE(fs::is_empty(elsewhere));
  // A file where a folder goes.
  ASSERT_TRUE(write_file(out + "/plain", "x", false).ok());
  EXPECT_FALSE(check_output_path(out, "plain/y.json").ok());
  // A link as the file itself is replaced, not written through.
  fs::create_symlink(elsewhere + "/victim", out + "/report.md");
  ASSERT_TRUE(write_output_file(out, "report.md", "mine", true).ok());
  EXPECT_FALSE(fs::exists(elsewhere + "/victim"));
  EXPECT_FALSE(fs::is_symlink(out + "/report.md"));
}

TEST(OutputDir, RemovesOnlyStaleFilesOfItsOwnNames) {
  const std::string dir = testing::fresh_test_dir("output-dir");
  const std::string elsewhere = dir + "-elsewhere";
  fs::remove_all(elsewhere);
  fs::create_directories(elsewhere);
  auto ours = [](const std::string& n) { return n.starts_with("t") && n.ends_with(".json"); };
  for (const char* f : {"t1.json", "t2.json", "notes.json", "t3.txt"}) {
    ASSERT_TRUE(write_file(dir + "/" + f, "x", false).ok());
    ASSERT_TRUE(write_file(elsewhere + "/" + f, "x", false).ok());
  }
  fs::create_directory(dir + "/t4.json");  // a folder of our name: left alone
  EXPECT_EQ(remove_stale_outputs(dir, "", ours, {"t1.json"}), 1U);
  EXPECT_TRUE(fs::exists(dir + "/t1.json"));
  EXPECT_FALSE(fs::exists(dir + "/t2.json"));
  EXPECT_TRUE(fs::exists(dir + "/notes.json"));
  EXPECT_TRUE(fs::exists(dir + "/t3.txt"));
  EXPECT_TRUE(fs::is_directory(dir + "/t4.json"));
  // Through a link: nothing at all.
  fs::create_directory_symlink(elsewhere, dir + "/sub");
  EXPECT_EQ(remove_stale_outputs(dir, "sub", ours, {}), 0U);
  EXPECT_TRUE(fs::exists(elsewhere + "/t1.json"));
  EXPECT_TRUE(fs::exists(elsewhere + "/t2.json"));
  fs::remove_all(elsewhere);
}

TEST(OutputDir, OneWriterAtATime) {
  const std::string dir = testing::fresh_test_dir("output-dir");
  ASSERT_TRUE(lock_output_dir(dir).ok());
  EXPECT_TRUE(lock_output_dir(dir).ok()) << "the same process again";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto l = lock_output_dir(dir);
    const bool named =
        !l.ok() && l.error().message.find("'" + dir +
                                          "' is being written by "
                                          "another dagsgd command") != std::string::npos;
    ::_exit(named ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the second process was not refused, or not by name";
}

}  // namespace
}  // namespace dagsgd::model
