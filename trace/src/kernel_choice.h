// Which of the JSON walk's kernels (importer_kernel.h) runs: those this CPU can, and simdjson's
// stage 1 held to the chosen one while a file is read.
#pragma once

namespace simdjson {
class implementation;
}  // namespace simdjson

namespace dagsgd::trace::detail {

// Runs simdjson's stage 1 with kernel `name`'s own implementation while it lives (the parser
// takes simdjson's active implementation when it allocates), so that a kernel chosen for a test is
// that kernel throughout. The active implementation is global: another thread parsing meanwhile
// gets the same results, only its speed may differ.
class Stage1As {
 public:
  explicit Stage1As(const char* name);
  Stage1As(const Stage1As&) = delete;
  Stage1As& operator=(const Stage1As&) = delete;
  ~Stage1As();

 private:
  const simdjson::implementation* was_ = nullptr;
  bool swapped_ = false;
};

}  // namespace dagsgd::trace::detail
