// Chakra execution traces read as a run (chakra_import.h): the files of the run and their ranks,
// each file's varint-framed GlobalMetadata and Node messages (Chakra's encodeMessage framing)
// decoded with the vendored schema, its nodes ordered by their dependencies and turned into
// events. Every refusal names the file and the node id or byte offset.
#include "chakra_import.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "dagsgd/model/dag.h"
#include "dagsgd/model/interrupt.h"
#include "dagsgd/model/io.h"
#include "dagsgd/trace/collective.h"
#include "et_def.pb.h"
#include "google/protobuf/stubs/logging.h"

namespace dagsgd::trace::detail {

namespace {

namespace fs = std::filesystem;
using model::Error;
using model::Nanos;
using Attr = ChakraProtoMsg::AttributeProto;

// What one file may hold (docs/limits.md): each node costs about 300 bytes and each dependency
// about 30 (the node, its event, its task and edges) however few bytes it takes in the file.
constexpr std::size_t kMaxNodes = std::size_t{1} << 23;
constexpr std::size_t kMaxDependencies = std::size_t{1} << 26;

// Reads a varint at `pos` of `data` (at most 10 bytes, as protobuf's); false when the bytes end
// first or it runs longer.
bool read_varint(const std::string& data, std::size_t& pos, std::uint64_t& out) {
  out = 0;
  for (int shift = 0; shift < 64 && pos < data.size(); shift += 7) {
    const auto b = static_cast<unsigned char>(data[pos++]);
    out |= static_cast<std::uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

// Whether a file of any name starts as a Chakra trace does: a length, then a GlobalMetadata's
// first field (version, a string, or attr, a message). JSON text and gzip never start so.
bool looks_like_chakra(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::string head(16, '\0');
  f.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(std::max<std::streamsize>(0, f.gcount())));
  if (head.empty()) return false;
  const auto first = static_cast<unsigned char>(head[0]);
  if (first == '{' || first == '[' || first == 0x1f || first == ' ' || first == '\n' ||
      first == '\r' || first == '\t') {
    return false;
  }
  std::size_t pos = 0;
  std::uint64_t len = 0;
  if (!read_varint(head, pos, len) || len == 0 || pos >= head.size()) return false;
  const auto tag = static_cast<unsigned char>(head[pos]);
  return tag == 0x0a || tag == 0x12;
}

// The rank NAME.<rank>.et says (-1: the name says none).
int rank_of_name(const std::string& path) {
  const std::string name = fs::path(path).filename().string();
  if (!name.ends_with(".et")) return -1;
  const std::string stem = name.substr(0, name.size() - 3);
  const auto dot = stem.rfind('.');
  if (dot == std::string::npos || dot + 1 == stem.size() || stem.size() - dot > 8) return -1;
  int r = 0;
  for (std::size_t i = dot + 1; i < stem.size(); ++i) {
    if (stem[i] < '0' || stem[i] > '9') return -1;
    r = r * 10 + (stem[i] - '0');
  }
  return r;
}

// An attribute's value as an integer (every integer and bool kind of the schema); false for
// other kinds and for unsigned values past int64.
bool attr_int(const Attr& a, std::int64_t& out) {
  switch (a.value_case()) {
    case Attr::kInt32Val:
      out = a.int32_val();
      return true;
    case Attr::kInt64Val:
      out = a.int64_val();
      return true;
    case Attr::kUint32Val:
      out = a.uint32_val();
      return true;
    case Attr::kSint32Val:
      out = a.sint32_val();
      return true;
    case Attr::kSint64Val:
      out = a.sint64_val();
      return true;
    case Attr::kFixed32Val:
      out = a.fixed32_val();
      return true;
    case Attr::kSfixed32Val:
      out = a.sfixed32_val();
      return true;
    case Attr::kSfixed64Val:
      out = a.sfixed64_val();
      return true;
    case Attr::kBoolVal:
      out = a.bool_val() ? 1 : 0;
      return true;
    case Attr::kUint64Val:
    case Attr::kFixed64Val: {
      const std::uint64_t v = a.value_case() == Attr::kUint64Val ? a.uint64_val() : a.fixed64_val();
      if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return false;
      out = static_cast<std::int64_t>(v);
      return true;
    }
    default:
      return false;
  }
}

// Chakra's CollectiveCommType (et_def.proto) as ours; kNone for GATHER and SCATTER, which we do
// not price (they stay compute with their recorded time). False for a value the schema lacks.
bool chakra_comm_kind(std::int64_t type, CollectiveKind& out) {
  static constexpr CollectiveKind kKinds[] = {
      CollectiveKind::kAllreduce,      // ALL_REDUCE
      CollectiveKind::kReduce,         // REDUCE
      CollectiveKind::kAllgather,      // ALL_GATHER
      CollectiveKind::kNone,           // GATHER
      CollectiveKind::kNone,           // SCATTER
      CollectiveKind::kBroadcast,      // BROADCAST
      CollectiveKind::kAlltoall,       // ALL_TO_ALL
      CollectiveKind::kReduceScatter,  // REDUCE_SCATTER
      CollectiveKind::kReduceScatter,  // REDUCE_SCATTER_BLOCK
      CollectiveKind::kBarrier};       // BARRIER
  if (type < 0 || type >= static_cast<std::int64_t>(std::size(kKinds))) return false;
  out = kKinds[type];
  return true;
}

// What the importer keeps of one node until the file's order is known.
struct NodeRecord {
  std::uint64_t id = 0;
  std::size_t offset = 0;  // of its message in the file
  std::string name;
  std::vector<std::uint64_t> deps;  // data_deps
  Nanos start = 0;
  Nanos dur = 0;
  bool cpu_op = false;
  CollectiveKind collective = CollectiveKind::kNone;
  std::string collective_name;
  std::int64_t bytes = -1;
  std::int64_t comm_ranks = 0;
  std::string kind;  // ours: the DAG task's kind
  std::int64_t layer = -1;
  std::int64_t iteration = -1;
  std::int64_t iteration_start = -1;
  bool iteration_end = false;
};

// protobuf's parser writes to stderr when a string field is not UTF-8 (and then fails, which the
// reader turns into its error); a library prints nothing, so its log goes nowhere.
void silence_protobuf_log() {
  static std::once_flag once;
  std::call_once(once, [] {
    google::protobuf::SetLogHandler(
        [](google::protobuf::LogLevel, const char*, int, const std::string&) {});
  });
}

class ChakraFile {
 public:
  ChakraFile(std::string path, std::string data, FileReport& report)
      : path_(std::move(path)), data_(std::move(data)), report_(report) {
    silence_protobuf_log();
  }

  model::Expected<ImportedRank> read(int rank_hint) {
    rank_.file = path_;
    rank_.rank = rank_hint;
    report_.file = path_;
    report_.bytes = static_cast<std::int64_t>(data_.size());
    DAGSGD_TRY(read_metadata());
    while (pos_ < data_.size()) {
      if ((nodes_.size() & 0xffff) == 0 && model::interrupt_requested()) {
        return Error{model::kInterruptedMessage};
      }
      DAGSGD_TRY(read_node());
    }
    DAGSGD_TRY(order_nodes());
    DAGSGD_TRY(make_events());
    return std::move(rank_);
  }

  std::int64_t stated_ranks() const { return stated_ranks_; }
  std::int64_t stated_rank() const { return stated_rank_; }

 private:
  Error error_at(std::size_t offset, const std::string& what) const {
    return Error{"Chakra trace '" + path_ + "': byte " + std::to_string(offset) + ": " + what};
  }
  Error error_node(const NodeRecord& n, const std::string& what) const {
    return Error{"Chakra trace '" + path_ + "': node " + std::to_string(n.id) + " (byte " +
                 std::to_string(n.offset) + "): " + what};
  }

  // The next framed message: its bytes' offset and length.
  model::Expected<std::pair<std::size_t, std::size_t>> next_message(const char* what) {
    const std::size_t at = pos_;
    std::uint64_t len = 0;
    if (!read_varint(data_, pos_, len)) {
      return error_at(at, std::string("truncated length of the ") + what + " message");
    }
    if (len > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) {
      return error_at(at, std::string("the ") + what + " message is " + std::to_string(len) +
                              " bytes long: protobuf reads at most 2^31-1");
    }
    if (len > data_.size() - pos_) {
      return error_at(at, std::string("the ") + what + " message is " + std::to_string(len) +
                              " bytes long, past the end of the file (" +
                              std::to_string(data_.size()) + " bytes): truncated");
    }
    const std::size_t begin = pos_;
    pos_ += static_cast<std::size_t>(len);
    return std::make_pair(begin, static_cast<std::size_t>(len));
  }

  model::Expected<void> read_metadata() {
    auto m = next_message("GlobalMetadata");
    if (!m) return m.error();
    ChakraProtoMsg::GlobalMetadata meta;
    if (!meta.ParseFromArray(data_.data() + m->first, static_cast<int>(m->second)) ||
        !meta.GetReflection()->GetUnknownFields(meta).empty()) {
      return error_at(0, "not a Chakra execution trace: the first message is not a GlobalMetadata");
    }
    for (const auto& a : meta.attr()) {
      std::int64_t v = 0;
      if (a.name() == "ranks" && attr_int(a, v)) stated_ranks_ = v;
      if (a.name() == "rank" && attr_int(a, v)) stated_rank_ = v;
      if (a.name() == "warmup" && attr_int(a, v))
        rank_.chakra.warmup = static_cast<int>(std::clamp<std::int64_t>(v, 0, 1 << 20));
      if (a.name() == "iteration_bounds_ns" && a.has_int64_list()) {
        for (auto t : a.int64_list().values()) rank_.chakra.bounds.push_back(t);
      }
      if (a.name() == "measured_iteration_ns" && a.has_int64_list()) {
        for (auto t : a.int64_list().values()) rank_.chakra.measured_iteration.push_back(t);
      }
    }
    for (Nanos t : rank_.chakra.bounds) {
      if (t < 0 || t >= model::kMaxDuration) return error_at(0, "iteration_bounds_ns out of range");
    }
    for (Nanos t : rank_.chakra.measured_iteration) {
      if (t < 0 || t >= model::kMaxDuration)
        return error_at(0, "measured_iteration_ns out of range");
    }
    return model::ok();
  }

  // Microseconds as nanoseconds, refused at kMaxDuration or beyond.
  model::Expected<Nanos> micros_ns(const NodeRecord& n, std::uint64_t us, const char* field) const {
    if (us >= static_cast<std::uint64_t>(model::kMaxDuration / 1000)) {
      return error_node(n, std::string(field) + " " + std::to_string(us) + " is out of range");
    }
    return static_cast<Nanos>(us) * 1000;
  }

  model::Expected<void> read_node() {
    const std::size_t at = pos_;
    auto m = next_message("Node");
    if (!m) return m.error();
    ChakraProtoMsg::Node node;
    if (!node.ParseFromArray(data_.data() + m->first, static_cast<int>(m->second)) ||
        !node.GetReflection()->GetUnknownFields(node).empty()) {
      return error_at(at, "not a Chakra Node message (message " +
                              std::to_string(nodes_.size() + 2) +
                              " of the file; or a string in it is not UTF-8)");
    }
    NodeRecord n;
    n.id = node.id();
    n.offset = at;
    n.name = node.name().substr(0, 4096);
    // data_deps only, as ASTRA-sim schedules (and dagsgd export writes every dependency there):
    // Chakra's PyTorch converter points ctrl_deps at the op that encloses a node, not at one
    // that must end first.
    n.deps.assign(node.data_deps().begin(), node.data_deps().end());
    dependencies_ += n.deps.size();
    if (nodes_.size() >= kMaxNodes || dependencies_ > kMaxDependencies) {
      return error_node(n, "more than " + std::to_string(kMaxNodes) + " nodes or " +
                               std::to_string(kMaxDependencies) +
                               " dependencies in one file: out of range");
    }
    auto start = micros_ns(n, node.start_time_micros(), "start_time_micros");
    if (!start) return start.error();
    auto dur = micros_ns(n, node.duration_micros(), "duration_micros");
    if (!dur) return dur.error();
    n.start = *start;
    n.dur = *dur;
    std::int64_t comm_type = -1;
    for (const auto& a : node.attr()) {
      std::int64_t v = 0;
      const std::string& k = a.name();
      const bool is_int = attr_int(a, v);
      if (k == "is_cpu_op" && is_int)
        n.cpu_op = v != 0;
      else if (k == "comm_type" && is_int)
        comm_type = v;
      else if (k == "comm_size" && is_int)
        n.bytes = v;
      else if (k == "comm_ranks" && is_int)
        n.comm_ranks = v;
      else if (k == "duration_ns" && is_int)
        n.dur = v;
      else if ((k == "layer" || k == "group") && is_int)
        n.layer = v;
      else if (k == "iteration" && is_int)
        n.iteration = v;
      else if (k == "iteration_start" && is_int)
        n.iteration_start = v;
      else if (k == "iteration_end" && is_int)
        n.iteration_end = v != 0;
      else if (k == "kind" && a.has_string_val())
        n.kind = a.string_val().substr(0, 64);
      else if (k == "collective" && a.has_string_val())
        n.collective_name = a.string_val().substr(0, 64);
    }
    if (n.dur < 0 || n.dur >= model::kMaxDuration) {
      return error_node(n, "duration_ns " + std::to_string(n.dur) + " is out of range");
    }
    if (n.iteration < -1 || n.iteration > 32767 || n.iteration_start > 32767 ||
        n.layer > (1 << 30)) {
      return error_node(n, "iteration or layer out of range");
    }
    switch (node.type()) {
      case ChakraProtoMsg::COMM_COLL_NODE:
        // Chakra's PyTorch converter also marks the host call that issues a collective
        // (c10d::allreduce_) a COMM_COLL_NODE, without comm_type: host work, replayed as such.
        if (comm_type >= 0) DAGSGD_TRY(read_collective(n, comm_type));
        break;
      case ChakraProtoMsg::INVALID_NODE:
      case ChakraProtoMsg::METADATA_NODE:
      case ChakraProtoMsg::MEM_LOAD_NODE:
      case ChakraProtoMsg::MEM_STORE_NODE:
      case ChakraProtoMsg::COMP_NODE:
      case ChakraProtoMsg::COMM_SEND_NODE:
      case ChakraProtoMsg::COMM_RECV_NODE:
        break;
      default:
        return error_node(n, "unknown node type " + std::to_string(static_cast<int>(node.type())));
    }
    auto [it, fresh] = index_.emplace(n.id, static_cast<std::int32_t>(nodes_.size()));
    if (!fresh) {
      return error_node(n, "the node id is also the id of the node at byte " +
                               std::to_string(nodes_[static_cast<std::size_t>(it->second)].offset));
    }
    nodes_.push_back(std::move(n));
    return model::ok();
  }

  model::Expected<void> read_collective(NodeRecord& n, std::int64_t comm_type) {
    CollectiveKind kind = CollectiveKind::kNone;
    if (!chakra_comm_kind(comm_type, kind)) {
      return error_node(n, "unknown comm_type " + std::to_string(comm_type));
    }
    if (kind == CollectiveKind::kNone) {
      problem("collective type not modeled (kept as compute)",
              "node " + std::to_string(n.id) + ": comm_type " + std::to_string(comm_type));
      return model::ok();
    }
    if (n.bytes < 0 || n.bytes >= (std::int64_t{1} << 50)) {
      return error_node(n, "comm_size " + std::to_string(n.bytes) +
                               (n.bytes < 0 ? " is missing or negative" : " is out of range"));
    }
    if (n.comm_ranks < 0 || n.comm_ranks > (1 << 20)) {
      return error_node(n, "comm_ranks " + std::to_string(n.comm_ranks) + " is out of range");
    }
    // Ours names the collective as traced (a reduce written as ALL_REDUCE); it must agree.
    CollectiveKind named =
        n.collective_name.empty() ? kind : classify_collective(n.collective_name);
    if (named == CollectiveKind::kNone) named = kind;
    n.collective = named;
    n.collective_name = collective_name(named);
    return model::ok();
  }

  void problem(const std::string& kind, const std::string& first) {
    report_.count_problem(kind, first);
  }

  // Parents as node indices, then an order in which every parent comes before its children;
  // a cycle names a node on it.
  model::Expected<void> order_nodes() {
    const std::size_t n = nodes_.size();
    parents_.assign(n, {});
    std::vector<std::vector<std::int32_t>> children(n);
    std::vector<std::int32_t> pending(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      auto& ds = nodes_[i].deps;
      std::sort(ds.begin(), ds.end());
      ds.erase(std::unique(ds.begin(), ds.end()), ds.end());
      for (auto d : ds) {
        auto it = index_.find(d);
        if (it == index_.end()) {
          problem("dependency on a node not in the file",
                  "node " + std::to_string(nodes_[i].id) + ": dependency " + std::to_string(d));
          continue;
        }
        parents_[i].push_back(it->second);
        children[static_cast<std::size_t>(it->second)].push_back(static_cast<std::int32_t>(i));
        ++pending[i];
      }
    }
    // Ready nodes in file order, so that a file already in dependency order keeps it.
    std::vector<std::int32_t> ready;
    for (std::size_t i = n; i-- > 0;) {
      if (pending[i] == 0) ready.push_back(static_cast<std::int32_t>(i));
    }
    order_.clear();
    order_.reserve(n);
    std::vector<std::int32_t> next;
    while (!ready.empty()) {
      std::sort(ready.begin(), ready.end(), std::greater<>());
      next.clear();
      while (!ready.empty()) {
        const std::int32_t v = ready.back();
        ready.pop_back();
        order_.push_back(v);
        for (auto c : children[static_cast<std::size_t>(v)]) {
          if (--pending[static_cast<std::size_t>(c)] == 0) next.push_back(c);
        }
      }
      ready.swap(next);
    }
    if (order_.size() == n) return model::ok();
    // Walk up from a node left over through parents that are left over: it comes back to a node
    // on a cycle.
    std::size_t v = 0;
    while (pending[v] == 0) ++v;
    std::vector<char> seen(n, 0);
    while (seen[v] == 0) {
      seen[v] = 1;
      for (auto p : parents_[v]) {
        if (pending[static_cast<std::size_t>(p)] != 0) {
          v = static_cast<std::size_t>(p);
          break;
        }
      }
    }
    return error_node(nodes_[v], "the node depends on itself through its dependencies (a cycle)");
  }

  model::Expected<void> make_events() {
    const std::size_t n = nodes_.size();
    bool timed = false;
    for (const auto& nd : nodes_) timed = timed || nd.start != 0;
    // Without recorded starts, each node starts when its last parent ends.
    std::vector<Nanos> start(n, 0);
    for (auto v : order_) {
      const auto i = static_cast<std::size_t>(v);
      if (timed) {
        start[i] = nodes_[i].start;
      } else {
        for (auto p : parents_[i]) {
          const auto pi = static_cast<std::size_t>(p);
          start[i] = std::max(start[i], model::saturating_add(start[pi], nodes_[pi].dur));
        }
        if (start[i] >= model::kMaxDuration) {
          return error_node(nodes_[i], "the dependencies' durations add up past 1e15 ns");
        }
      }
    }
    // Events by (start, longer first, dependency order), as every importer sorts them.
    std::vector<std::int32_t> rank_in_order(n);
    for (std::size_t k = 0; k < n; ++k)
      rank_in_order[static_cast<std::size_t>(order_[k])] = static_cast<std::int32_t>(k);
    std::vector<std::int32_t> events(order_);
    std::stable_sort(events.begin(), events.end(), [&](std::int32_t a, std::int32_t b) {
      const auto ia = static_cast<std::size_t>(a), ib = static_cast<std::size_t>(b);
      if (start[ia] != start[ib]) return start[ia] < start[ib];
      if (nodes_[ia].dur != nodes_[ib].dur) return nodes_[ia].dur > nodes_[ib].dur;
      return rank_in_order[ia] < rank_in_order[ib];
    });
    std::vector<std::int32_t> event_of(n);
    for (std::size_t k = 0; k < n; ++k)
      event_of[static_cast<std::size_t>(events[k])] = static_cast<std::int32_t>(k);
    auto& info = rank_.chakra;
    info.timed = timed;
    info.node_id.reserve(n);
    info.deps_begin.reserve(n + 1);
    rank_.events.reserve(n);
    std::unordered_map<std::string, std::int32_t> strings;
    auto intern = [&](const std::string& s) {
      auto [it, fresh] = strings.emplace(s, static_cast<std::int32_t>(rank_.strings.size()));
      if (fresh) rank_.strings.push_back(s);
      return it->second;
    };
    for (auto v : events) {
      const NodeRecord& nd = nodes_[static_cast<std::size_t>(v)];
      ImportedEvent e;
      e.ts = start[static_cast<std::size_t>(v)];
      e.dur = nd.dur;
      e.name = intern(nd.name);
      e.gpu = !nd.cpu_op;
      e.category = nd.cpu_op ? EventCategory::kCpuOp : EventCategory::kKernel;
      e.tid = nd.cpu_op ? 0 : 1;
      if (nd.collective != CollectiveKind::kNone) {
        e.collective = intern(nd.collective_name);
        e.bytes = nd.bytes;
        e.group_size = static_cast<std::int32_t>(nd.comm_ranks);
      }
      if (!nd.kind.empty()) e.phase = phase_from_name(nd.kind);
      if (nd.layer >= 0) e.layer = intern(std::to_string(nd.layer));
      if (nd.iteration >= 0) e.iteration = intern(std::to_string(nd.iteration));
      const auto ei = static_cast<std::int32_t>(rank_.events.size());
      if (nd.iteration_start >= 0) {
        const auto k = static_cast<std::size_t>(nd.iteration_start);
        if (info.iteration_start.size() <= k) info.iteration_start.resize(k + 1, -1);
        info.iteration_start[k] = ei;
      }
      if (nd.iteration_end) info.iteration_end = ei;
      info.node_id.push_back(nd.id);
      info.deps_begin.push_back(static_cast<std::int32_t>(info.deps.size()));
      for (auto p : parents_[static_cast<std::size_t>(v)]) {
        info.deps.push_back(event_of[static_cast<std::size_t>(p)]);
      }
      info.task_kind.push_back(task_kind_of(nd.kind));
      if (info.task_kind.back() == static_cast<std::int8_t>(model::TaskKind::kMemcpy) ||
          info.task_kind.back() == static_cast<std::int8_t>(model::TaskKind::kH2D)) {
        e.category = EventCategory::kMemcpy;
      }
      ++report_.by_category[static_cast<std::size_t>(e.category)];
      rank_.events.push_back(e);
    }
    info.deps_begin.push_back(static_cast<std::int32_t>(info.deps.size()));
    report_.events = static_cast<std::int64_t>(n);
    report_.complete_events = static_cast<std::int64_t>(n);
    report_.metadata = 1;
    return model::ok();
  }

  // Ours: the DAG task's kind by its name (model::task_kind_name); -1 when none is stated.
  static std::int8_t task_kind_of(const std::string& kind) {
    for (int k = 0; k < model::kTaskKindCount; ++k) {
      if (kind == model::task_kind_name(static_cast<model::TaskKind>(k))) {
        return static_cast<std::int8_t>(k);
      }
    }
    return -1;
  }

  std::string path_;
  std::string data_;
  FileReport& report_;
  std::size_t pos_ = 0;
  ImportedRank rank_;
  std::vector<NodeRecord> nodes_;
  std::unordered_map<std::uint64_t, std::int32_t> index_;
  std::vector<std::vector<std::int32_t>> parents_;
  std::vector<std::int32_t> order_;
  std::int64_t stated_ranks_ = 0;
  std::int64_t stated_rank_ = -1;
  std::size_t dependencies_ = 0;
};

std::string missing_rank_file(const std::string& like, int rank) {
  const fs::path p(like);
  std::string name = p.filename().string();
  const std::string stem = name.substr(0, name.size() - 3);
  const auto dot = stem.rfind('.');
  const std::string prefix = dot == std::string::npos ? stem : stem.substr(0, dot);
  return (p.parent_path() / (prefix + "." + std::to_string(rank) + ".et")).string();
}

}  // namespace

model::Expected<std::vector<std::string>> chakra_files(const std::vector<std::string>& paths) {
  std::vector<std::string> chakra;
  std::string kineto;
  std::error_code ec;
  if (paths.size() == 1 && fs::is_directory(paths[0], ec)) {
    if (!find_manifest(paths[0]).empty()) return chakra;
    for (fs::directory_iterator it(paths[0], ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code type_ec;
      if (!it->is_regular_file(type_ec)) continue;
      const std::string name = it->path().filename().string();
      if (name.ends_with(".et")) chakra.push_back(it->path().string());
      if (is_kineto_name(name)) kineto = it->path().string();
    }
    std::sort(chakra.begin(), chakra.end());
  } else {
    for (const auto& p : paths) {
      if (fs::is_directory(p, ec)) return std::vector<std::string>();  // import_run says why
      if (p.ends_with(".et") || (!is_kineto_name(p) && looks_like_chakra(p))) {
        chakra.push_back(p);
      } else if (kineto.empty()) {
        kineto = p;
      }
    }
  }
  if (!chakra.empty() && !kineto.empty()) {
    return Error{"'" + chakra.front() + "' is a Chakra execution trace and '" + kineto +
                 "' is not: give the traces of one run, all Chakra (.et) or all Kineto"};
  }
  return chakra;
}

model::Expected<ImportedRun> import_chakra_run(const std::string& path,
                                               const std::vector<std::string>& files,
                                               const ImportOptions& options) {
  ImportedRun run;
  run.source = RunSource::kChakra;
  run.path = path;
  std::int64_t stated_ranks = 0;
  std::string stated_by;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (model::interrupt_requested()) return Error{model::kInterruptedMessage};
    auto data = model::read_file(files[i]);
    if (!data) return data.error();
    FileReport rep;
    ChakraFile file(files[i], std::move(*data), rep);
    const int by_name = rank_of_name(files[i]);
    auto rank = file.read(by_name >= 0 ? by_name : static_cast<int>(i));
    if (!rank) return rank.error();
    if (by_name < 0 && file.stated_rank() >= 0 && file.stated_rank() < (1 << 20)) {
      rank->rank = static_cast<int>(file.stated_rank());
    }
    if (options.strict && !rep.problems.empty()) {
      const auto& p = rep.problems.front();
      return Error{"Chakra trace '" + files[i] + "': " + p.kind + " (" + p.first + "); " +
                   std::to_string(p.count) + " in all (--strict)"};
    }
    if (file.stated_ranks() > stated_ranks) {
      stated_ranks = file.stated_ranks();
      stated_by = files[i];
    }
    rep.rank = rank->rank;
    run.ranks.push_back(std::move(*rank));
    run.report.files.push_back(std::move(rep));
  }
  // Ranks in order, each once, none missing: a Chakra run is one file per rank.
  DAGSGD_TRY(order_by_rank(run));
  auto& ranks = run.ranks;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const auto& r = ranks[i];
    const int expected = static_cast<int>(i);
    if (r.rank != expected) {
      return Error{"Chakra trace of rank " + std::to_string(expected) + " missing: '" +
                   missing_rank_file(r.file, expected) + "' (a run is one file per rank, " +
                   "NAME.<rank>.et from 0; '" + r.file + "' is rank " + std::to_string(r.rank) +
                   ")"};
    }
  }
  if (stated_ranks > static_cast<std::int64_t>(ranks.size())) {
    return Error{"Chakra trace of rank " + std::to_string(ranks.size()) + " missing: '" +
                 missing_rank_file(ranks.back().file, static_cast<int>(ranks.size())) + "' ('" +
                 stated_by + "' says the run has " + std::to_string(stated_ranks) + " ranks)"};
  }
  for (auto& r : ranks) {
    r.world_size = static_cast<int>(ranks.size());
    r.world_size_stated = true;
  }
  return run;
}

}  // namespace dagsgd::trace::detail
