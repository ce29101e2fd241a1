// Whole-file reading (plain or gzip) and careful writing for every component.
#include "dagsgd/model/io.h"

#include <sys/stat.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace dagsgd::model {

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

Expected<std::string> read_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Error{"cannot read '" + path + "': " + std::strerror(errno)};
  }
  if (S_ISDIR(st.st_mode)) return Error{"cannot read '" + path + "': it is a directory"};
  bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  if (!gz) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Error{"cannot read '" + path + "': " + std::strerror(errno)};
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return Error{"cannot read '" + path + "': " + std::strerror(errno)};
  std::string out;
  char buf[1 << 16];
  for (;;) {
    int n = gzread(f, buf, sizeof buf);
    if (n < 0) {
      int err = 0;
      std::string msg = gzerror(f, &err);
      gzclose(f);
      return Error{"cannot decompress '" + path + "': " + msg};
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  gzclose(f);
  return out;
}

Expected<void> write_file(const std::string& path, const std::string& content, bool force) {
  if (!force && file_exists(path)) {
    return Error{"'" + path + "' exists; use --force to overwrite it"};
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Error{"cannot write '" + path + "': " + std::strerror(errno)};
  out << content;
  out.close();
  if (!out) return Error{"cannot write '" + path + "'"};
  return ok();
}

}  // namespace dagsgd::model
