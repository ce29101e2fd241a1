// The injection library loaded the way the CUDA driver loads it (dlopen + InitializeInjection):
// inert without DAGSGD_CUPTI_DIR, and without a GPU a one-line error and no trace file.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>

#include "dagsgd/runtime/cuda/cuda_ops.h"

namespace dagsgd::runtime {
namespace {

using InitFn = int (*)();

InitFn load_init() {
  void* lib = ::dlopen(DAGSGD_CUPTI_INJECT, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return nullptr;
  return reinterpret_cast<InitFn>(::dlsym(lib, "InitializeInjection"));  // NOLINT
}

TEST(CuptiInjection, ExportsOnlyTheEntryPointAndIsInertWithoutADirectory) {
  InitFn init = load_init();
  ASSERT_NE(init, nullptr) << ::dlerror();
  void* lib = ::dlopen(DAGSGD_CUPTI_INJECT, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(lib, nullptr);
  // Our libraries' symbols stay inside (the host program may link its own copies).
  EXPECT_EQ(::dlsym(lib, "_ZN6dagsgd5trace10phase_nameENS0_5PhaseE"), nullptr);
  ::unsetenv("DAGSGD_CUPTI_DIR");
  testing::internal::CaptureStderr();
  EXPECT_EQ(init(), 1);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST(CuptiInjection, WithoutAGpuReportsOneLineAndWritesNothing) {
  if (cuda::device_count() > 0) GTEST_SKIP() << "a GPU is present; see cuda_gpu_tests";
  InitFn init = load_init();
  ASSERT_NE(init, nullptr) << ::dlerror();
  namespace fs = std::filesystem;
  fs::path dir = fs::path(::testing::TempDir()) / ("inject-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  ::setenv("DAGSGD_CUPTI_DIR", dir.c_str(), 1);
  testing::internal::CaptureStderr();
  EXPECT_EQ(init(), 1);
  std::string err = testing::internal::GetCapturedStderr();
  ::unsetenv("DAGSGD_CUPTI_DIR");
  EXPECT_EQ(err.rfind("dagsgd-cupti: error: CUPTI: ", 0), 0u) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_TRUE(fs::is_empty(dir));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dagsgd::runtime
