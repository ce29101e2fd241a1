// The native part of the Python module: the dagsgd command line run in this process
// (tools/dagsgd/run_cli.h). dagsgd/__init__.py turns keyword arguments into its arguments and
// its JSON output into Python objects; nothing else lives here.
#include <dlfcn.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <mutex>
#include <string>
#include <vector>

#include "dagsgd/model/paths.h"
#include "run_cli.h"

namespace py = pybind11;

// The installed module's data: <site>/dagsgd/_dagsgd*.so finds <prefix>/share/dagsgd/datasets
// (model/paths.h); in the build tree there is none there and the source tree's is used.
extern "C" const char* dagsgd_installed_data_dir() {
  static const std::string dir = [] {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&dagsgd_installed_data_dir), &info) == 0 ||
        info.dli_fname == nullptr) {
      return std::string();
    }
    return dagsgd::model::data_dir_beside(info.dli_fname, DAGSGD_MODULE_TO_DATA);
  }();
  return dir.empty() ? nullptr : dir.c_str();
}

PYBIND11_MODULE(_dagsgd, m) {
  m.doc() = "dagsgd's command line, run in-process (use the functions of the dagsgd package)";
  m.def(
      "run_cli",
      [](const std::vector<std::string>& args) {
        // One command at a time (the libraries are not made for concurrent calls), without
        // holding up the interpreter's other threads while a sweep runs.
        static std::mutex one_at_a_time;
        std::string out;
        std::string err;
        int code = 0;
        {
          py::gil_scoped_release release;
          std::lock_guard<std::mutex> lock(one_at_a_time);
          code = dagsgd::tools::run_cli(args, out, err);
        }
        return py::make_tuple(code, py::bytes(out), py::bytes(err));
      },
      py::arg("args"), "Runs `dagsgd ARGS...`; returns (exit code, stdout bytes, stderr bytes).");
  m.def("data_dir", &dagsgd::model::data_dir,
        "The data directory the commands read (networks, hardware catalogs).");
  m.def("version", &dagsgd::model::tool_version, "The dagsgd version.");
}
