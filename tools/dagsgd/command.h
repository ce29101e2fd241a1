// The subcommand plumbing of the dagsgd CLI: each subcommand registers itself on the root app.
#pragma once

#include <functional>
#include <string>

#include <CLI/CLI.hpp>

namespace dagsgd::tools {

// What the chosen subcommand does after parsing; returns the process exit code.
using Action = std::function<int()>;

// Exit codes (DESIGN.md, "The CLI").
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;

// Prints "dagsgd: error: <message>" to stderr and returns `code`.
int report_error(const std::string& message, int code = kExitBadInput);

// Each add_* creates its subcommand under `root` and, when it is chosen, sets `action`.
void add_predict(CLI::App& root, Action& action);
void add_calibrate(CLI::App& root, Action& action);
void add_train(CLI::App& root, Action& action);
void add_collect(CLI::App& root, Action& action);
void add_whatif(CLI::App& root, Action& action);
void add_analyze(CLI::App& root, Action& action);
void add_replay(CLI::App& root, Action& action);
void add_validate(CLI::App& root, Action& action);

}  // namespace dagsgd::tools
