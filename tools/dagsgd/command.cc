// What every subcommand shares: how errors and results reach the terminal (or, embedded, the
// caller's strings), and the one root command both the binary and run_cli parse with.
#include "command.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <utility>

#include "dagsgd/model/io.h"
#include "dagsgd/model/number_range.h"
#include "dagsgd/model/paths.h"

namespace dagsgd::tools {

namespace {

// Where output goes while run_cli runs a command on this thread; null: the process's streams.
thread_local std::string* t_out = nullptr;
thread_local std::string* t_err = nullptr;
// The arguments of the command this thread runs (run_commands); null outside one.
thread_local const std::vector<std::string>* t_args = nullptr;

void write_err(const std::string& s) {
  if (t_err != nullptr) {
    *t_err += s;
  } else {
    std::fwrite(s.data(), 1, s.size(), stderr);
  }
}

// Sends this thread's output to two strings for as long as it lives.
class Capture {
 public:
  Capture(std::string& out, std::string& err)
      : out_(std::exchange(t_out, &out)), err_(std::exchange(t_err, &err)) {}
  ~Capture() {
    t_out = out_;
    t_err = err_;
  }
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;

 private:
  std::string* out_;
  std::string* err_;
};

}  // namespace

int report_error(const std::string& message, int code) {
  write_err("dagsgd: error: " + message + "\n");
  return code;
}

void print(const std::string& s) {
  if (t_out != nullptr) {
    *t_out += s;
  } else {
    std::fwrite(s.data(), 1, s.size(), stdout);
  }
}

void print_note(const std::string& s) { write_err(s); }

bool embedded() { return t_out != nullptr; }

namespace {

// `word` as one word of a POSIX shell command line: as it is when no character in it means
// anything to the shell, else in single quotes (a quote inside as '\'').
std::string shell_word(const std::string& word) {
  const bool plain = !word.empty() && word.find_first_not_of(
                                          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                          "0123456789_@%+=:,./-") == std::string::npos;
  if (plain) return word;
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace

std::string command_line(const std::vector<std::string>& options_left_out,
                         const std::vector<std::string>& flags_left_out) {
  auto named = [](const std::vector<std::string>& names, const std::string& a) {
    return std::find(names.begin(), names.end(), a) != names.end();
  };
  std::string line = "dagsgd";
  const std::vector<std::string> none;
  const auto& args = t_args != nullptr ? *t_args : none;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const std::string name = a.substr(0, a.find('='));
    if (named(flags_left_out, a)) continue;
    if (named(options_left_out, name)) {
      if (name == a) ++i;  // "--out DIR" rather than "--out=DIR"
      continue;
    }
    line += " " + shell_word(a);
  }
  return line;
}

namespace {

// A check that `range` (model::parse_number) decides; `name` is what --help shows. A whole
// number must be written as digits ("1e3" and "64.0" are refused here, with the range, rather
// than by CLI11's integer conversion, which says only "Could not convert").
CLI::Validator number_in(const model::NumberRange& range, const std::string& name) {
  return {[range](std::string& text) -> std::string {
            auto v = model::parse_number(text, range);
            if (!v) return v.error().message;
            const std::size_t sign = text[0] == '-' || text[0] == '+' ? 1 : 0;
            if (range.whole && text.find_first_not_of("0123456789", sign) != std::string::npos) {
              return "must be " + range.expected + ", got '" + text + "'";
            }
            return std::string();
          },
          name};
}

}  // namespace

CLI::Validator positive_finite() { return number_in(model::positive_finite_range(), "NUMBER > 0"); }

CLI::Validator duration_seconds(bool zero_allowed) {
  return number_in(model::duration_seconds_range(zero_allowed), "SECONDS");
}

CLI::Validator fraction() { return number_in(model::fraction_range(), "0..1"); }

CLI::Validator worker_count() { return number_in(model::worker_count_range(), "1..2^20"); }

CLI::Validator whole_number(long min, long max) {
  return number_in(model::whole_number_range(min, max),
                   std::to_string(min) + ".." + std::to_string(max));
}

int prepare_outputs(const std::string& dir, const std::vector<std::string>& files, bool force,
                    std::vector<std::filesystem::path>* created) {
  namespace fs = std::filesystem;
  std::vector<fs::path> folders = {dir};
  for (const auto& f : files) folders.push_back((fs::path(dir) / f).parent_path());
  std::error_code ec;
  for (const auto& folder : folders) {  // a file or a dangling link where a folder goes
    if (fs::exists(fs::symlink_status(folder, ec)) && !fs::is_directory(folder, ec)) {
      return report_error("'" + folder.string() + "' is not a directory");
    }
  }
  for (const auto& f : files) {
    const fs::path path = fs::path(dir) / f;
    if (auto inside = model::check_output_path(dir, f); !inside) {
      return report_error(inside.error().message);
    }
    if (!force && model::file_exists(path.string())) {
      return report_error("'" + path.string() + "' exists; use --force to overwrite");
    }
  }
  for (const auto& folder : folders) {
    for (fs::path p = folder; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
      if (created != nullptr) created->insert(created->begin(), p);  // innermost first
    }
    fs::create_directories(folder, ec);
    if (ec) {
      return report_error("cannot create '" + folder.string() + "': " + ec.message(), kExitFailure);
    }
  }
  auto lock = model::lock_output_dir(dir);
  return lock ? kExitOk : report_error(lock.error().message);
}

int write_output(const std::string& dir, const std::string& name, const std::string& content,
                 bool force) {
  auto w = model::write_output_file(dir, name, content, force);
  return w ? kExitOk : report_error(w.error().message, kExitFailure);
}

void add_commands(CLI::App& app, Action& action) {
  app.set_version_flag("--version", std::string("dagsgd ") + dagsgd::model::tool_version());
  app.require_subcommand(1);
  // Subcommands, in the order `dagsgd --help` lists them.
  add_predict(app, action);
  add_whatif(app, action);
  add_calibrate(app, action);
  add_analyze(app, action);
  add_replay(app, action);
  add_topology(app, action);
  add_export(app, action);
  add_stack(app, action);
}

int run_commands(const std::vector<std::string>& args, const Commands& more) {
  CLI::App app{kRootHelp, "dagsgd"};
  Action action;
  add_commands(app, action);
  if (more) more(app, action);
  // CLI11 consumes the arguments from the back.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  std::ostringstream help_out;
  std::ostringstream help_err;
  try {
    app.parse(reversed);
  } catch (const CLI::Success& e) {  // --help, --help-all, --version
    const int code = app.exit(e, help_out, help_err);
    print(help_out.str());
    write_err(help_err.str());
    return code;
  } catch (const CLI::ParseError& e) {
    report_error(e.what());
    write_err("Run 'dagsgd --help' or 'dagsgd <command> --help' for usage.\n");
    return kExitBadInput;
  }
  if (!action) return report_error("no command given; run 'dagsgd --help'");
  const std::vector<std::string>* outer = std::exchange(t_args, &args);
  const int code = action();
  t_args = outer;
  return code;
}

int run_cli(const std::vector<std::string>& args, std::string& out, std::string& err) {
  Capture capture(out, err);
  if (!args.empty() && (args[0] == "train" || args[0] == "collect" || args[0] == "validate")) {
    return report_error("'" + args[0] + "' starts MPI processes; run it with the dagsgd binary");
  }
  return run_commands(args);
}

}  // namespace dagsgd::tools
