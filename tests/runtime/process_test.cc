// run_process(): exit codes and signals as the shell reports them, output into a log, an added
// environment, and programs that cannot run.
#include "dagsgd/runtime/process.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>

#include "dagsgd/model/io.h"

namespace dagsgd::runtime {
namespace {

std::string temp_file(const std::string& name) {
  std::filesystem::path p = ::testing::TempDir();
  p /= "process-" + std::to_string(::getpid()) + "-" + name;
  std::filesystem::remove(p);
  return p.string();
}

TEST(Process, ExitCodeAndSignal) {
  ProcessResult ok = run_process({"true"});
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.status(), 0);
  ProcessResult three = run_process({"sh", "-c", "exit 3"});
  EXPECT_FALSE(three.ok());
  EXPECT_EQ(three.status(), 3);
  EXPECT_EQ(three.describe(), "exited with status 3");
  ProcessResult killed = run_process({"sh", "-c", "kill -9 $$"});
  EXPECT_EQ(killed.signal, SIGKILL);
  EXPECT_EQ(killed.status(), 128 + SIGKILL);
  EXPECT_NE(killed.describe().find("killed by signal 9"), std::string::npos);
}

TEST(Process, OutputGoesToTheLogAndStdoutToItsFile) {
  const std::string log = temp_file("log");
  const std::string out = temp_file("out");
  ProcessOptions o;
  o.log = log;
  o.env = {{"DAGSGD_PROCESS_TEST", "from the parent"}};
  ASSERT_TRUE(run_process({"sh", "-c", "echo \"$DAGSGD_PROCESS_TEST\"; echo err >&2"}, o).ok());
  ASSERT_TRUE(run_process({"sh", "-c", "echo second"}, o).ok());  // appended
  EXPECT_EQ(*model::read_file(log), "from the parent\nerr\nsecond\n");
  o.stdout_file = out;
  ASSERT_TRUE(run_process({"sh", "-c", "echo data; echo note >&2"}, o).ok());
  EXPECT_EQ(*model::read_file(out), "data\n");
  EXPECT_EQ(*model::read_file(log), "from the parent\nerr\nsecond\nnote\n");
}

TEST(Process, MissingProgramExits127WithItsName) {
  const std::string log = temp_file("missing");
  ProcessOptions o;
  o.log = log;
  ProcessResult r = run_process({"/nonexistent/dagsgd-no-such-program"}, o);
  EXPECT_TRUE(r.started);
  EXPECT_EQ(r.status(), 127);
  EXPECT_NE(model::read_file(log)->find("cannot run '/nonexistent/dagsgd-no-such-program'"),
            std::string::npos);
  EXPECT_EQ(run_process({}).status(), -1);
}

TEST(Process, SelfExeAndCommandLine) {
  EXPECT_NE(self_exe().find("runtime_tests"), std::string::npos) << self_exe();
  auto argv = own_command_line();
  ASSERT_FALSE(argv.empty());
  EXPECT_NE(argv[0].find("runtime_tests"), std::string::npos) << argv[0];
}

}  // namespace
}  // namespace dagsgd::runtime
