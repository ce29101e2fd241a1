// Whole-file reading (plain or gzip, with size and inflate-ratio caps) and careful writing for
// every component.
#include "dagsgd/model/io.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <thread>
#include <tuple>
#include <vector>

namespace dagsgd::model {

namespace {

constexpr std::size_t kChunk = std::size_t{1} << 16;
// Room left after the text for simdjson's padding, so that the trace reader does not copy it.
constexpr std::size_t kReadPadding = 64;

std::string human_bytes(std::int64_t n) {
  if (n >= (std::int64_t{1} << 30) && n % (std::int64_t{1} << 30) == 0) {
    return std::to_string(n >> 30) + " GiB";
  }
  if (n >= (std::int64_t{1} << 20) && n % (std::int64_t{1} << 20) == 0) {
    return std::to_string(n >> 20) + " MiB";
  }
  return std::to_string(n) + " bytes";
}

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Owns a file descriptor.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  void reset(int fd) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

// Asks for 2 MiB pages under a large read buffer: a 100 MB trace then takes about 50 page
// faults instead of 25,000 (the kernel's zeroing and faults were a third of an import's time).
void advise_huge_pages(std::string& s) {
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  if (s.capacity() < 2 * kHuge) return;
  const auto begin = reinterpret_cast<std::uintptr_t>(s.data());
  const std::uintptr_t first = (begin + kHuge - 1) & ~(kHuge - 1);
  const std::uintptr_t last = (begin + s.capacity()) & ~(kHuge - 1);
  // Advice only: where the kernel does not take it, pages stay 4 KiB.
  if (last > first) ::madvise(s.data() + (first - begin), last - first, MADV_HUGEPAGE);
}

// Reads up to `n` bytes; 0 at the end of the file, -1 on error (errno set).
ssize_t read_some(int fd, char* buf, std::size_t n) {
  for (;;) {
    ssize_t got = ::read(fd, buf, n);
    if (got >= 0 || errno != EINTR) return got;
  }
}

Expected<std::string> read_plain(int fd, const std::string& path, std::int64_t size_hint,
                                 std::int64_t max_bytes) {
  std::string out;
  // Files of /proc report size 0 and still have content: the hint only reserves.
  if (size_hint > 0) out.reserve(static_cast<std::size_t>(size_hint) + kReadPadding);
  advise_huge_pages(out);
  std::vector<char> buf(kChunk);
  for (;;) {
    ssize_t got = read_some(fd, buf.data(), buf.size());
    if (got < 0) return Error{"cannot read '" + path + "': " + std::strerror(errno)};
    if (got == 0) break;
    if (static_cast<std::int64_t>(out.size()) + got > max_bytes) {
      return Error{"cannot read '" + path + "': it is larger than the " + human_bytes(max_bytes) +
                   " limit for this kind of file (docs/limits.md)"};
    }
    out.append(buf.data(), static_cast<std::size_t>(got));
  }
  return out;
}

// Streaming inflate of gzip (or zlib) members, concatenated members included; stops as soon as
// the output passes `max_bytes` or the inflate ratio passes kMaxGzipRatio.
Expected<std::string> read_gzip(int fd, const std::string& path, std::int64_t file_size,
                                std::int64_t max_bytes) {
  z_stream z{};
  // 15 + 32: a 32 KiB window, gzip or zlib header detected.
  if (inflateInit2(&z, 15 + 32) != Z_OK) {
    return Error{"cannot decompress '" + path + "': zlib could not start"};
  }
  struct Closer {
    z_stream* z;
    ~Closer() { inflateEnd(z); }
  } closer{&z};
  std::vector<unsigned char> in(kChunk);
  std::vector<unsigned char> out_buf(kChunk);
  std::string out;
  // The gzip trailer states the inflated size (mod 2^32): reserved up front (within the limits
  // below), the text is inflated in place rather than grown and copied.
  unsigned char isize[4] = {0, 0, 0, 0};
  if (file_size >= 18 && ::pread(fd, isize, 4, file_size - 4) == 4) {
    const auto hint = static_cast<std::int64_t>(
        static_cast<std::uint32_t>(isize[0]) | static_cast<std::uint32_t>(isize[1]) << 8 |
        static_cast<std::uint32_t>(isize[2]) << 16 | static_cast<std::uint32_t>(isize[3]) << 24);
    if (hint <= max_bytes &&
        static_cast<double>(hint) <= kMaxGzipRatio * static_cast<double>(file_size) +
                                         static_cast<double>(kGzipRatioFloorBytes)) {
      out.reserve(static_cast<std::size_t>(hint) + kReadPadding);
      advise_huge_pages(out);
    }
  }
  std::int64_t consumed = 0;  // compressed bytes fed to inflate
  bool member_done = false;   // the last inflate ended a gzip member
  bool pending = false;       // the last inflate filled its output: it may hold more
  bool eof = false;
  for (;;) {
    if (z.avail_in == 0 && !pending && !eof) {
      ssize_t got = read_some(fd, reinterpret_cast<char*>(in.data()), in.size());
      if (got < 0) return Error{"cannot read '" + path + "': " + std::strerror(errno)};
      eof = got == 0;
      z.next_in = in.data();
      z.avail_in = static_cast<uInt>(got);
    }
    if (z.avail_in == 0 && !pending) break;
    if (member_done) {
      // Another gzip member may follow (what `cat a.gz b.gz` makes); anything else after a
      // member is ignored, as gzread ignores it.
      if (z.avail_in < 2 || z.next_in[0] != 0x1f || z.next_in[1] != 0x8b) break;
      if (inflateReset(&z) != Z_OK) return Error{"cannot decompress '" + path + "'"};
      member_done = false;
    }
    const uInt before_in = z.avail_in;
    z.next_out = out_buf.data();
    z.avail_out = static_cast<uInt>(out_buf.size());
    const int rc = inflate(&z, Z_NO_FLUSH);
    consumed += before_in - z.avail_in;
    const std::size_t produced = out_buf.size() - z.avail_out;
    if (rc != Z_OK && rc != Z_STREAM_END && !(rc == Z_BUF_ERROR && produced == 0)) {
      std::string why = z.msg != nullptr ? z.msg : "corrupt data";
      return Error{"cannot decompress '" + path + "': " + why + " (compressed byte " +
                   std::to_string(consumed) + ")"};
    }
    if (static_cast<std::int64_t>(out.size() + produced) > max_bytes) {
      return Error{"cannot decompress '" + path + "': it inflates to more than the " +
                   human_bytes(max_bytes) + " limit for this kind of file (docs/limits.md)"};
    }
    out.append(reinterpret_cast<const char*>(out_buf.data()), produced);
    const auto total = static_cast<std::int64_t>(out.size());
    if (total > kGzipRatioFloorBytes &&
        static_cast<double>(total) >
            kMaxGzipRatio * static_cast<double>(std::max<std::int64_t>(consumed, 1))) {
      return Error{"cannot decompress '" + path + "': " + std::to_string(consumed) +
                   " compressed bytes inflate to " + std::to_string(total) + " bytes, over the " +
                   std::to_string(static_cast<int>(kMaxGzipRatio)) +
                   ":1 limit (a decompression bomb?); see docs/limits.md"};
    }
    pending = z.avail_out == 0;
    if (rc == Z_STREAM_END) {
      member_done = true;
      pending = false;
    }
    if (rc == Z_BUF_ERROR && eof && z.avail_in == 0) break;  // input ends inside a member
    if (rc == Z_BUF_ERROR && produced == 0 && z.avail_in == before_in && before_in > 0) {
      return Error{"cannot decompress '" + path + "': inflate made no progress"};
    }
  }
  if (!member_done) {
    return Error{"cannot decompress '" + path + "': the gzip data ends early (after " +
                 std::to_string(consumed) + " compressed bytes)"};
  }
  return out;
}

// The checks read_file makes before reading: opens `path` into `fd` and gives the file's stat,
// or the error. `gz`: the file is gzip (by name and magic bytes).
struct Opened {
  struct stat st {};
  bool gz = false;
};

Expected<Opened> open_checked(const std::string& path, std::int64_t max_bytes, Fd& fd) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below.
  fd.reset(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) return Error{"cannot read '" + path + "': " + std::strerror(errno)};
  Opened o;
  if (::fstat(fd.get(), &o.st) != 0) {
    return Error{"cannot read '" + path + "': " + std::strerror(errno)};
  }
  if (!S_ISREG(o.st.st_mode)) {
    return Error{"cannot read '" + path + "': it is " + file_kind(o.st.st_mode) +
                 ", not a regular file"};
  }
  const bool gz_name = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  unsigned char magic[2] = {0, 0};
  ssize_t got = gz_name ? ::pread(fd.get(), magic, 2, 0) : 0;
  o.gz = gz_name && got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  // Not gzip after all (or not named so): the bytes as they are, as gzread would give them.
  if (!o.gz && o.st.st_size > max_bytes) {
    return Error{"cannot read '" + path + "': it is " + std::to_string(o.st.st_size) +
                 " bytes, over the " + human_bytes(max_bytes) +
                 " limit for this kind of file (docs/limits.md)"};
  }
  return o;
}

}  // namespace

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;  // a dangling link is there too
}

Expected<std::string> read_file(const std::string& path, std::int64_t max_bytes) {
  Fd fd(-1);
  auto o = open_checked(path, max_bytes, fd);
  if (!o) return o.error();
  if (o->gz) return read_gzip(fd.get(), path, o->st.st_size, max_bytes);
  return read_plain(fd.get(), path, o->st.st_size, max_bytes);
}

FileText::FileText(std::string text) : text_(std::move(text)) {
  text_.reserve(text_.size() + kReadPadding);
}

FileText::FileText(FileText&& o) noexcept
    : text_(std::move(o.text_)), map_(o.map_), map_bytes_(o.map_bytes_), size_(o.size_) {
  o.map_ = nullptr;
  o.map_bytes_ = o.size_ = 0;
}

FileText& FileText::operator=(FileText&& o) noexcept {
  if (this != &o) {
    release();
    text_ = std::move(o.text_);
    map_ = o.map_;
    map_bytes_ = o.map_bytes_;
    size_ = o.size_;
    o.map_ = nullptr;
    o.map_bytes_ = o.size_ = 0;
  }
  return *this;
}

FileText::~FileText() { release(); }

void FileText::release() {
  char* map = map_;
  const std::size_t map_bytes = map_bytes_;
  const std::size_t bytes = map != nullptr ? map_bytes : text_.capacity();
  map_ = nullptr;
  map_bytes_ = size_ = 0;
  if (bytes >= kBackgroundReleaseBytes) {
    // A large text goes back on a thread of its own: unmapping tens of MB (each page's table
    // entry cleared, each page freed) took 8% of an import of 78 MB (docs/performance.md), time
    // the reader's caller does not need to wait for.
    std::string* text = nullptr;
    try {
      text = new std::string(std::move(text_));
      std::thread([map, map_bytes, text] {
        if (map != nullptr) ::munmap(map, map_bytes);
        delete text;
      }).detach();
      return;
    } catch (const std::exception&) {
      // No memory or no thread to be had: here, then (`text_` still holds the text when the
      // new string could not be made).
      if (map != nullptr) ::munmap(map, map_bytes);
      delete text;
      std::string().swap(text_);
      return;
    }
  }
  if (map != nullptr) ::munmap(map, map_bytes);
  std::string().swap(text_);
}

Expected<FileText> read_file_text(const std::string& path, std::int64_t max_bytes) {
  Fd fd(-1);
  auto o = open_checked(path, max_bytes, fd);
  if (!o) return o.error();
  auto read = [&]() -> Expected<FileText> {
    auto text = o->gz ? read_gzip(fd.get(), path, o->st.st_size, max_bytes)
                      : read_plain(fd.get(), path, o->st.st_size, max_bytes);
    if (!text) return text.error();
    return FileText(std::move(*text));
  };
  if (o->gz || o->st.st_size < FileText::kMapBytes) return read();
  // Anonymous pages first, the file over all but the last: the padding after the text is the
  // file's last page (zeros past its end) or the anonymous page after it.
  const auto size = static_cast<std::size_t>(o->st.st_size);
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t bytes = (size + kReadPadding + page - 1) / page * page;
  void* area = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (area != MAP_FAILED && ::mmap(area, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED,
                                   fd.get(), 0) == MAP_FAILED) {
    ::munmap(area, bytes);
    area = MAP_FAILED;
  }
  // A file system that does not map (or no address space left): read.
  if (area == MAP_FAILED) return read();
  FileText out;
  out.map_ = static_cast<char*>(area);
  out.map_bytes_ = bytes;
  out.size_ = size;
  return out;
}

Expected<void> write_file(const std::string& path, const std::string& content, bool force) {
  if (!force && file_exists(path)) {
    return Error{"'" + path + "' exists; use --force to overwrite it"};
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return Error{"cannot write '" + path + "': it is a directory"};
  }
  // Written beside and renamed over: rename replaces a link itself, never what it names.
  const std::string tmp = path + ".dagsgd-tmp-" + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0) return Error{"cannot write '" + path + "': " + std::strerror(errno)};
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return Error{"cannot write '" + path + "': " + why};
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return Error{"cannot write '" + path + "': " + why};
  }
  return ok();
}

Expected<void> check_output_path(const std::string& dir, const std::string& relative) {
  std::string at = dir;
  std::size_t start = 0;
  for (std::size_t slash = relative.find('/'); slash != std::string::npos;
       start = slash + 1, slash = relative.find('/', start)) {
    const std::string part = relative.substr(start, slash - start);
    if (part.empty() || part == ".") continue;
    if (part == "..") return Error{"'" + relative + "' leaves the output folder '" + dir + "'"};
    at += "/" + part;
    struct stat st {};
    if (::lstat(at.c_str(), &st) != 0) return ok();  // not there yet: it will be a folder
    if (S_ISLNK(st.st_mode)) {
      return Error{"'" + at + "' is a link: dagsgd writes only inside '" + dir +
                   "', never through a link; remove it or choose another folder"};
    }
    if (!S_ISDIR(st.st_mode)) return Error{"'" + at + "' is not a directory"};
  }
  return ok();
}

Expected<void> write_output_file(const std::string& dir, const std::string& relative,
                                 const std::string& content, bool force) {
  DAGSGD_TRY(check_output_path(dir, relative));
  return write_file(dir + "/" + relative, content, force);
}

std::size_t remove_stale_outputs(const std::string& dir, const std::string& folder,
                                 const std::function<bool(const std::string&)>& ours,
                                 const std::vector<std::string>& keep) {
  if (!check_output_path(dir, folder.empty() ? "x" : folder + "/x")) return 0;
  const std::string at = folder.empty() ? dir : dir + "/" + folder;
  std::error_code ec;
  std::vector<std::string> stale;
  for (std::filesystem::directory_iterator it(at, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    struct stat st {};
    const std::string path = it->path().string();
    if (::lstat(path.c_str(), &st) != 0 || !(S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))) continue;
    if (ours(name) && std::find(keep.begin(), keep.end(), name) == keep.end()) {
      stale.push_back(path);
    }
  }
  std::size_t removed = 0;
  for (const auto& p : stale) removed += ::unlink(p.c_str()) == 0 ? 1 : 0;
  return removed;
}

Expected<void> lock_output_dir(const std::string& dir) {
  // Folders this process has locked, by device and inode: the descriptors stay open (and the
  // locks held) until the process ends.
  // A forked child inherits the list but not the right to the locks: entries carry the pid.
  static std::vector<std::tuple<pid_t, dev_t, ino_t>> held;
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Error{"cannot open '" + dir + "': " + std::strerror(errno)};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return Error{"cannot open '" + dir + "': " + std::strerror(errno)};
  }
  const auto key = std::make_tuple(::getpid(), st.st_dev, st.st_ino);
  if (std::find(held.begin(), held.end(), key) != held.end()) {
    ::close(fd);
    return ok();
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return Error{"'" + dir +
                   "' is being written by another dagsgd command; wait for it to finish or "
                   "give another output folder"};
    }
    return Error{"cannot lock '" + dir + "': " + std::strerror(err)};
  }
  held.push_back(key);
  return ok();
}

std::string text_position(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  std::size_t line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(offset - line_start + 1);
}

std::size_t find_invalid_utf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len = 0;
    unsigned char lo = 0x80;
    unsigned char hi = 0xbf;  // allowed range of the second byte (RFC 3629 table)
    if (c >= 0xc2 && c <= 0xdf) {
      len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
      len = 3;
      if (c == 0xe0) lo = 0xa0;  // no overlong forms
      if (c == 0xed) hi = 0x9f;  // no surrogates
    } else if (c >= 0xf0 && c <= 0xf4) {
      len = 4;
      if (c == 0xf0) lo = 0x90;
      if (c == 0xf4) hi = 0x8f;  // nothing above U+10FFFF
    } else {
      return i;
    }
    if (i + len > n || s[i + 1] < lo || s[i + 1] > hi) return i;
    for (std::size_t k = 2; k < len; ++k) {
      if ((s[i + k] & 0xc0) != 0x80) return i;
    }
    i += len;
  }
  return std::string_view::npos;
}

}  // namespace dagsgd::model
