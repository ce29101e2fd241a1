// The subcommand plumbing of the dagsgd CLI: each subcommand registers itself on the root app;
// exit codes and the one way errors are printed.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <CLI/CLI.hpp>

#include "dagsgd/model/flag_table.h"

#include "run_cli.h"

namespace dagsgd::tools {

// What the chosen subcommand does after parsing; returns the process exit code.
using Action = std::function<int()>;

// Exit codes (DESIGN.md, "The CLI").
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;

// Prints "dagsgd: error: <message>" to stderr and returns `code`.
int report_error(const std::string& message, int code = kExitBadInput);
// Writes `s` to stdout as it is.
void print(const std::string& s);
// Writes `s` to stderr as it is (notes and warnings beside a result).
void print_note(const std::string& s);
// Whether the command runs inside another program (run_cli): its output goes to strings, and it
// must neither start MPI nor draw on the terminal.
bool embedded();

// The command line this thread runs, as the user gave it (recorded once, by run_commands, for
// the binary and run_cli), as model::shell_command_line writes it: "dagsgd" and the arguments
// less `options_left_out` and `flags_left_out` (what says where the output goes, not what it is).
std::string command_line(const std::vector<std::string>& options_left_out,
                         const std::vector<std::string>& flags_left_out);

// Checks for numeric options, the ranges of model/number_range.h, where CLI11's own let NaN
// through (PositiveNumber) or describe the whole double range (docs/limits.md).
CLI::Validator positive_finite();
CLI::Validator duration_seconds(bool zero_allowed);
CLI::Validator fraction();
CLI::Validator worker_count();
// A whole number from `min` to `max` (CLI11's own number checks print ranges as 1.79e308-digit
// numbers and refuse "1e3" without saying why).
CLI::Validator whole_number(long min, long max);
// The check of a number in `range` (--help shows its label).
CLI::Validator number_check(const model::NumberRange& range);

// Registers one row of a flag table (model/flag_table.h) whose field is `field`.
template <class Row>
CLI::Option* add_flag_row(CLI::App& app, const Row& row, const model::FlagField& field) {
  CLI::Option* o = std::visit(
      [&](auto* value) {
        if constexpr (std::is_same_v<decltype(value), bool*>) {
          return app.add_flag(row.name, *value, row.help);
        } else {
          return app.add_option(row.name, *value, row.help);
        }
      },
      field);
  if (row.range) o->check(number_check(*row.range));
  if (!row.choices.empty()) o->check(CLI::IsMember(row.choices));
  if (row.existing_file) o->check(CLI::ExistingFile);
  if (row.list) o->delimiter(',');
  if (row.show_default) o->capture_default_str();
  return o;
}

// Registers every row of `table` on `app`, filling `target`.
template <class T>
void add_flag_table(CLI::App& app, T& target, const std::vector<model::FlagSpec<T>>& table) {
  for (const auto& row : table) add_flag_row(app, row, row.field(target));
}

// The names of the options of `app` given on its command line.
std::vector<std::string> given_options(const CLI::App& app);

// Before a command writes `files` (paths below `dir`): model::check_output_files, then
// model::make_output_folders, adding those it made to `created`. kExitOk, or the code of the
// error it reported.
int prepare_outputs(const std::string& dir, const std::vector<std::string>& files, bool force,
                    std::vector<std::string>* created = nullptr);
// Writes `content` to `dir`/`name`; kExitOk, or kExitFailure with the error reported.
int write_output(const std::string& dir, const std::string& name, const std::string& content,
                 bool force);

// Registers subcommands on the root command.
using Commands = std::function<void(CLI::App& root, Action& action)>;

inline constexpr const char* kRootHelp =
    "dagsgd: trace, replay and what-if analysis of synchronous data-parallel SGD.\n"
    "Run 'dagsgd <command> --help' for a command's options.";

// The root command's version flag and the subcommands any process can run (predict, whatif,
// calibrate, analyze, replay, topology, export, stack): the one option table of run_commands
// and of options_json.
void add_commands(CLI::App& app, Action& action);

// The whole command line after the program name: the root command with the subcommands any
// process can run (predict, whatif, calibrate, analyze, replay, topology, export) and then
// parsed once; runs the chosen subcommand and returns its exit code. Output goes to this
// process's stdout and stderr.
int run_commands(const std::vector<std::string>& args, const Commands& more = {});

// Adds subcommand `name` with its options struct; when it is chosen, `action` runs `run` on
// the parsed options. Returns the subcommand (to declare options on) and the options.
template <class Options>
std::pair<CLI::App*, std::shared_ptr<Options>> add_command(CLI::App& root, Action& action,
                                                           const std::string& name,
                                                           const std::string& help,
                                                           int (*run)(const Options&)) {
  auto opts = std::make_shared<Options>();
  CLI::App* sub = root.add_subcommand(name, help);
  sub->callback([opts, run, &action] { action = [opts, run] { return run(*opts); }; });
  return {sub, opts};
}

// Each add_* creates its subcommand under `root` and, when it is chosen, sets `action`.
void add_predict(CLI::App& root, Action& action);
void add_calibrate(CLI::App& root, Action& action);
void add_train(CLI::App& root, Action& action);
void add_collect(CLI::App& root, Action& action);
void add_whatif(CLI::App& root, Action& action);
void add_analyze(CLI::App& root, Action& action);
void add_replay(CLI::App& root, Action& action);
void add_validate(CLI::App& root, Action& action);
void add_topology(CLI::App& root, Action& action);
void add_export(CLI::App& root, Action& action);
void add_stack(CLI::App& root, Action& action);

}  // namespace dagsgd::tools
