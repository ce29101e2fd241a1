// What every subcommand shares: how errors and results reach the terminal.
#include "command.h"

#include <cstdio>

namespace dagsgd::tools {

int report_error(const std::string& message, int code) {
  std::fprintf(stderr, "dagsgd: error: %s\n", message.c_str());
  return code;
}

void print(const std::string& s) { std::fwrite(s.data(), 1, s.size(), stdout); }

}  // namespace dagsgd::tools
