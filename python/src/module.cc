// The native part of the Python module: the dagsgd command line run in this process
// (tools/dagsgd/run_cli.h), and its option table. dagsgd/__init__.py turns keyword arguments
// into its arguments and its JSON output into Python objects; nothing else lives here.
#include <dlfcn.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dagsgd/model/interrupt.h"
#include "dagsgd/model/paths.h"
#include "run_cli.h"

namespace py = pybind11;

// The installed module's data: a package installed by pip carries it beside the module
// (<site>/dagsgd/data/datasets); one installed by CMake finds <prefix>/share/dagsgd/datasets
// (model/paths.h). In the build tree there is neither and the source tree's is used.
extern "C" const char* dagsgd_installed_data_dir() {
  static const std::string dir = [] {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&dagsgd_installed_data_dir), &info) == 0 ||
        info.dli_fname == nullptr) {
      return std::string();
    }
    std::string beside = dagsgd::model::data_dir_beside(info.dli_fname, "data/datasets");
    if (!beside.empty()) return beside;
    return dagsgd::model::data_dir_beside(info.dli_fname, DAGSGD_MODULE_TO_DATA);
  }();
  return dir.empty() ? nullptr : dir.c_str();
}

namespace {

// One command, run on a thread of its own so that the calling thread can watch for signals.
struct Call {
  std::vector<std::string> args;
  std::string out;
  std::string err;
  int code = 0;
  bool done = false;
  std::mutex m;
  std::condition_variable cv;
};

void run_call(Call& c) {
  int code = 1;
  try {
    code = dagsgd::tools::run_cli(c.args, c.out, c.err);
  } catch (const std::exception& e) {
    c.err += std::string("dagsgd: error: ") + e.what() + "\n";
  }
  std::lock_guard<std::mutex> lock(c.m);
  c.code = code;
  c.done = true;
  c.cv.notify_all();
}

// Runs `args` without holding the GIL. Every 50 ms the calling thread runs Python's signal
// handlers (PyErr_CheckSignals): when one raises (Ctrl-C: KeyboardInterrupt), the command is
// asked to stop (model/interrupt.h), and the exception is raised once it has.
py::tuple run_cli_interruptible(const std::vector<std::string>& args) {
  // One command at a time: the libraries are not made for concurrent calls.
  static std::mutex one_at_a_time;
  std::unique_lock<std::mutex> serial;
  {
    py::gil_scoped_release release;
    serial = std::unique_lock<std::mutex>(one_at_a_time);
  }
  dagsgd::model::request_interrupt(false);
  auto call = std::make_shared<Call>();
  call->args = args;
  std::thread worker([call] { run_call(*call); });
  bool interrupted = false;
  for (;;) {
    bool finished = false;
    {
      py::gil_scoped_release release;
      std::unique_lock<std::mutex> lock(call->m);
      finished = call->cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return call->done; });
    }
    if (finished) break;
    if (!interrupted && PyErr_CheckSignals() != 0) {
      interrupted = true;
      dagsgd::model::request_interrupt(true);
    }
  }
  {
    py::gil_scoped_release release;
    worker.join();
  }
  dagsgd::model::request_interrupt(false);
  if (interrupted) throw py::error_already_set();
  return py::make_tuple(call->code, py::bytes(call->out), py::bytes(call->err));
}

}  // namespace

PYBIND11_MODULE(_dagsgd, m) {
  m.doc() = "dagsgd's command line, run in-process (use the functions of the dagsgd package)";
  m.def("run_cli", &run_cli_interruptible, py::arg("args"),
        "Runs `dagsgd ARGS...`; returns (exit code, stdout bytes, stderr bytes). A signal whose "
        "handler raises (Ctrl-C) stops the command and raises.");
  m.def("options_json", &dagsgd::tools::options_json,
        "The commands' options, from the parser's table, as JSON.");
  m.def("data_dir", &dagsgd::model::data_dir,
        "The data directory the commands read (networks, hardware catalogs).");
  m.def("version", &dagsgd::model::tool_version, "The dagsgd version.");
}
