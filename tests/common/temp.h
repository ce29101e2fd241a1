// A temporary directory of the running test's own: ctest runs the tests of one program in
// parallel, so two tests that share a fixed directory remove each other's files.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace dagsgd::testing {

// `<temp>/<prefix>-<Suite>.<Test>`, emptied and created.
inline std::string fresh_test_dir(const std::string& prefix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = prefix;
  if (info != nullptr) name += std::string("-") + info->test_suite_name() + "." + info->name();
  const auto dir = std::filesystem::temp_directory_path() / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace dagsgd::testing
