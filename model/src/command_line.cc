// Shell command lines (command_line.h).
#include "dagsgd/model/command_line.h"

#include <algorithm>

namespace dagsgd::model {

std::string shell_word(const std::string& word) {
  const bool plain = !word.empty() && word.find_first_not_of(
                                          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                          "0123456789_@%+=:,./-") == std::string::npos;
  if (plain) return word;
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string shell_command_line(const std::string& program, const std::vector<std::string>& args,
                               const std::vector<std::string>& options_left_out,
                               const std::vector<std::string>& flags_left_out) {
  auto named = [](const std::vector<std::string>& names, const std::string& a) {
    return std::find(names.begin(), names.end(), a) != names.end();
  };
  std::string line = shell_word(program);
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

}  // namespace dagsgd::model
