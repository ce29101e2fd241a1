// The dagsgd command line as a function, for programs that embed it (the Python module): the
// same parsing and commands as the dagsgd binary, with the output in strings.
#pragma once

#include <string>
#include <vector>

namespace dagsgd::tools {

// Runs `args` (the command line after the program name, e.g. {"predict", "--network",
// "resnet50", "--json"}) in this process and returns the exit code (0 ok, 1 failure, 2 bad input
// or usage). What the command prints goes to `out` and `err` instead of stdout and stderr. The
// subcommands that start MPI (train, collect, validate) are not among them. Output is captured
// per thread; the libraries underneath are not meant for concurrent calls.
int run_cli(const std::vector<std::string>& args, std::string& out, std::string& err);

// The options of the commands run_cli runs, from the parser's own table, as one JSON object:
// {"predict": {"help": TEXT, "options": [{"name": "--network", "positional": false,
// "kind": "value"|"list"|"flag", "type": "TEXT"|"INT"|"FLOAT"|..., "checks": TEXT,
// "existing_file": BOOL, "required": BOOL, "default": TEXT, "help": TEXT}, ...]}, ...}.
std::string options_json();

}  // namespace dagsgd::tools
