// What every subcommand shares: how errors and results reach the terminal (or, embedded, the
// caller's strings), and the one root command both the binary and run_cli parse with.
#include "command.h"

#include <cstdio>
#include <filesystem>
#include <sstream>
#include <utility>

#include "dagsgd/model/command_line.h"
#include "dagsgd/model/io.h"
#include "dagsgd/model/number_range.h"
#include "dagsgd/model/output_files.h"
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

std::string command_line(const std::vector<std::string>& options_left_out,
                         const std::vector<std::string>& flags_left_out) {
  static const std::vector<std::string> none;
  return model::shell_command_line("dagsgd", t_args != nullptr ? *t_args : none, options_left_out,
                                   flags_left_out);
}

CLI::Validator number_check(const model::NumberRange& range) {
  return {[range](std::string& text) {
            auto v = model::parse_number(text, range);
            return v ? std::string() : v.error().message;
          },
          range.label};
}

std::vector<std::string> given_options(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options()) {
    if (o->count() > 0) names.push_back(o->get_name());
  }
  return names;
}

CLI::Validator positive_finite() { return number_check(model::positive_finite_range()); }

CLI::Validator duration_seconds(bool zero_allowed) {
  return number_check(model::duration_seconds_range(zero_allowed));
}

CLI::Validator fraction() { return number_check(model::fraction_range()); }

CLI::Validator worker_count() { return number_check(model::worker_count_range()); }

CLI::Validator whole_number(long min, long max) {
  return number_check(model::whole_number_range(min, max));
}

int prepare_outputs(const std::string& dir, const std::vector<std::string>& files, bool force,
                    std::vector<std::string>* created) {
  if (auto ok = model::check_output_files(dir, files, force); !ok) {
    return report_error(ok.error().message);
  }
  auto made = model::make_output_folders(dir, files);
  if (!made) return report_error(made.error().message, kExitFailure);
  if (created != nullptr) created->insert(created->end(), made->begin(), made->end());
  auto lock = model::lock_output_dir(dir);  // one writer per --out
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
