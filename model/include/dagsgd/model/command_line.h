// A command line written for a POSIX shell: what a report prints so that its reader can run the
// same command again.
#pragma once

#include <string>
#include <vector>

namespace dagsgd::model {

// `word` as one word of a POSIX shell command line: as it is when no character in it means
// anything to the shell, else in single quotes (a quote inside as '\'').
std::string shell_word(const std::string& word);

// `program` and then `args`, each a shell_word, less the options in `options_left_out` with
// their values ("--out DIR", "--out=DIR") and the flags in `flags_left_out`.
std::string shell_command_line(const std::string& program, const std::vector<std::string>& args,
                               const std::vector<std::string>& options_left_out,
                               const std::vector<std::string>& flags_left_out);

}  // namespace dagsgd::model
