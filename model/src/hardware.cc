// Loading the GPU and interconnect catalogs (datasets/hardware/*.json): human units in the files,
// SI units (bytes/s, FLOP/s, ns) in memory; every row validated with its file and position.
#include "dagsgd/model/hardware.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "dagsgd/model/comm_model.h"
#include "dagsgd/model/io.h"
#include "dagsgd/model/paths.h"
#include "file_schema.h"
#include "message_text.h"

namespace dagsgd::model {
namespace {

using Json = nlohmann::json;

// File units -> SI. Gbit/s (1e9 bits) for links, as network and NVLink datasheets state them.
constexpr double kBytesPerSecPerGBps = 1e9;
constexpr double kFlopsPerTflops = 1e12;
constexpr double kBytesPerGib = 1024.0 * 1024.0 * 1024.0;
constexpr double kMaxGib = 1e6;

const std::vector<std::string> kGpuFields = {
    "name",       "description", "fp32_tflops", "fp16_tflops", "memory_gbytes_per_s",
    "memory_gib", "device",      "source"};
const std::vector<std::string> kFabricFields = {"name",
                                                "description",
                                                "scope",
                                                "nominal_gbps",
                                                "achievable_gbps",
                                                "latency_us",
                                                "eager_limit_bytes",
                                                "rendezvous_latency_us",
                                                "burst_bytes",
                                                "allreduce_measured",
                                                "source"};
const std::vector<std::string> kScopes = {"intra", "inter", "both"};

// The ranges a catalog row may state, in file units (docs/limits.md): far beyond any real GPU or
// link, tight enough that every time computed from them is a finite double.
constexpr double kMinRate = 1e-6;  // TFLOP/s, GB/s, Gbit/s: 1 MFLOP/s, 1 kB/s, 1 kbit/s
constexpr double kMaxTflops = 1e6;
constexpr double kMaxGbytesPerS = 1e6;
constexpr double kMaxGbps = 1e7;
constexpr double kMaxLatencyUs = 1e7;  // 10 s per message
constexpr double kMaxEagerLimitBytes = 1e12;
constexpr double kMaxMeasuredBytes = 1e15;
constexpr double kMaxMeasuredRanks = 1 << 20;

// Reads the fields of one row; each accessor's error names the field.
class Row {
 public:
  explicit Row(const Json& j) : j_(j) {}

  Expected<void> only_fields(const std::vector<std::string>& allowed) const {
    for (const auto& [key, value] : j_.items()) {
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        return Error{"unknown field '" + key + "'; valid fields: " + message::join(allowed)};
      }
    }
    return ok();
  }

  Expected<std::string> text(const std::string& key) const {
    auto it = j_.find(key);
    if (it == j_.end()) return Error{"missing '" + key + "'"};
    if (!it->is_string() || it->get<std::string>().empty()) {
      return Error{"'" + key + "' must be a non-empty string"};
    }
    return it->get<std::string>();
  }

  // A finite number in [lo, hi] (file units, named by `unit` in the message); `fallback` when
  // absent and not required.
  Expected<double> number(const std::string& key, bool required, double lo, double hi,
                          const char* unit, double fallback = 0) const {
    auto it = j_.find(key);
    if (it == j_.end()) {
      if (required) return Error{"missing '" + key + "'"};
      return fallback;
    }
    if (!it->is_number())
      return Error{"'" + key + "' must be a number, got " + message::short_dump(*it)};
    double v = it->get<double>();
    if (!(v >= lo && v <= hi)) {
      std::ostringstream msg;
      msg << "'" << key << "' must be from " << lo << " to " << hi << " " << unit << ", got "
          << message::short_dump(*it) << (std::isfinite(v) && v >= 0 ? " (out of range)" : "");
      return Error{msg.str()};
    }
    return v;
  }

 private:
  const Json& j_;
};

std::string row_context(const std::string& kind, std::size_t index, const Json& row) {
  std::string ctx = kind + " " + std::to_string(index);
  if (row.is_object()) {
    auto it = row.find("name");
    if (it != row.end() && it->is_string()) ctx += " ('" + it->get<std::string>() + "')";
  }
  return ctx;
}

// A catalog row's start: an object with only `fields`, and what it says of itself (name,
// description and source, all required).
template <class Spec>
Expected<Spec> identified(const Json& j, const std::vector<std::string>& fields) {
  if (!j.is_object()) return Error{"must be an object"};
  const Row row(j);
  DAGSGD_TRY(row.only_fields(fields));
  Spec spec;
  for (auto [key, field] : {std::pair{"name", &Spec::name},
                            {"description", &Spec::description},
                            {"source", &Spec::source}}) {
    auto value = row.text(key);
    DAGSGD_TRY(value);
    spec.*field = *value;
  }
  return spec;
}

Expected<GpuSpec> parse_gpu(const Json& j) {
  auto g = identified<GpuSpec>(j, kGpuFields);
  DAGSGD_TRY(g);
  const Row row(j);
  for (auto [key, field, scale, hi, unit] :
       {std::tuple{"fp32_tflops", &GpuSpec::fp32_flops, kFlopsPerTflops, kMaxTflops, "TFLOP/s"},
        {"fp16_tflops", &GpuSpec::fp16_flops, kFlopsPerTflops, kMaxTflops, "TFLOP/s"},
        {"memory_gbytes_per_s", &GpuSpec::memory_bandwidth, kBytesPerSecPerGBps, kMaxGbytesPerS,
         "GB/s"}}) {
    auto value = row.number(key, true, kMinRate, hi, unit);
    DAGSGD_TRY(value);
    (*g).*field = *value * scale;
  }
  // Optional: a device's memory capacity in GiB (2^30 bytes, as HBM capacities are stated).
  auto capacity = row.number("memory_gib", false, kMinRate, kMaxGib, "GiB");
  DAGSGD_TRY(capacity);
  g->memory_bytes = *capacity * kBytesPerGib;
  if (j.contains("device")) {
    const Json& d = j["device"];
    if (d != "gpu" && d != "cpu") {
      return Error{"'device' must be \"gpu\" or \"cpu\", got " + message::short_dump(d)};
    }
    g->cpu = d == "cpu";
  }
  return g;
}

// "allreduce_measured": [{"ranks": 2, "sizes_bytes": [...], "latency_us": [...]}, ...]
Expected<std::vector<MeasuredAllreduce>> parse_measured(const Json& j) {
  const std::string field = "'allreduce_measured'";
  if (!j.is_array()) return Error{field + " must be a list, got " + message::short_dump(j)};
  std::vector<MeasuredAllreduce> out;
  std::set<int> seen;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const Json& c = j[i];
    const std::string where = field + " entry " + std::to_string(i);
    if (!c.is_object()) return Error{where + " must be an object"};
    Row row(c);
    auto only = row.only_fields(
        {"ranks", "sizes_bytes", "latency_us", "max_latency_us", "min_latency_us", "algorithm"});
    if (!only) return Error{where + ": " + only.error().message};
    auto ranks = row.number("ranks", true, 2, kMaxMeasuredRanks, "ranks");
    if (!ranks) return Error{where + ": " + ranks.error().message};
    if (*ranks < 2 || *ranks != std::floor(*ranks)) {
      return Error{where + ": 'ranks' must be a whole number >= 2"};
    }
    MeasuredAllreduce m;
    m.ranks = static_cast<int>(*ranks);
    if (auto a = c.find("algorithm"); a != c.end()) {
      if (!a->is_string()) return Error{where + ": 'algorithm' must be a string"};
      m.algorithm = a->get<std::string>();
      std::vector<std::string> formulas = comm_algorithm_names();
      std::erase(formulas, std::string("auto"));
      if (auto known = NameRegistry("allreduce formula", formulas).check(m.algorithm); !known) {
        return Error{where + ": 'algorithm': " + known.error().message};
      }
    }
    if (!seen.insert(m.ranks).second) {
      return Error{where + ": a second curve for " + std::to_string(m.ranks) + " ranks"};
    }
    auto sizes = c.find("sizes_bytes");
    auto lat = c.find("latency_us");
    if (sizes == c.end() || lat == c.end() || !sizes->is_array() || !lat->is_array() ||
        sizes->size() != lat->size() || sizes->size() < 2) {
      return Error{where +
                   ": needs lists 'sizes_bytes' and 'latency_us' of the same length, "
                   "at least 2"};
    }
    for (std::size_t k = 0; k < sizes->size(); ++k) {
      const Json& b = (*sizes)[k];
      const Json& t = (*lat)[k];
      if (!b.is_number_integer() || b.get<double>() <= 0 || b.get<double>() > kMaxMeasuredBytes) {
        return Error{where + ": sizes_bytes[" + std::to_string(k) +
                     "] must be a whole number from 1 to 1e15, got " + message::short_dump(b)};
      }
      if (!t.is_number() || !(t.get<double>() > 0)) {
        return Error{where + ": latency_us[" + std::to_string(k) + "] must be > 0, got " +
                     message::short_dump(t)};
      }
      auto latency =
          duration_ns(t.get<double>(), 1e3, where + ": latency_us[" + std::to_string(k) + "]");
      DAGSGD_TRY(latency);
      const Bytes bytes = b.get<std::int64_t>();
      if (!m.points.empty() && bytes <= m.points.back().first) {
        return Error{where + ": sizes_bytes must increase (" + std::to_string(bytes) + " after " +
                     std::to_string(m.points.back().first) + ")"};
      }
      m.points.emplace_back(bytes, *latency);
    }
    // The slowest and the fastest rank's latencies bracket the average one's.
    auto bound = [&](const char* key, bool above, std::vector<Nanos>& into) -> Expected<void> {
      auto col = c.find(key);
      if (col == c.end()) return {};
      if (!col->is_array() || col->size() != sizes->size()) {
        return Error{where + ": '" + key + "' must be a list as long as 'sizes_bytes'"};
      }
      for (std::size_t k = 0; k < col->size(); ++k) {
        const Json& t = (*col)[k];
        const std::string what = where + ": " + key + "[" + std::to_string(k) + "]";
        if (!t.is_number()) return Error{what + " must be a number, got " + message::short_dump(t)};
        auto latency = duration_ns(t.get<double>(), 1e3, what);
        DAGSGD_TRY(latency);
        if (above ? *latency < m.points[k].second : *latency > m.points[k].second) {
          return Error{what + (above ? " must be >= " : " must be <= ") + "latency_us[" +
                       std::to_string(k) + "], got " + message::short_dump(t)};
        }
        into.push_back(*latency);
      }
      return {};
    };
    DAGSGD_TRY(bound("max_latency_us", true, m.slowest));
    DAGSGD_TRY(bound("min_latency_us", false, m.fastest));
    out.push_back(std::move(m));
  }
  return out;
}

Expected<FabricSpec> parse_fabric(const Json& j) {
  auto identity = identified<FabricSpec>(j, kFabricFields);
  DAGSGD_TRY(identity);
  FabricSpec f = std::move(*identity);
  const Row row(j);
  auto scope = row.text("scope");
  DAGSGD_TRY(scope);
  if (std::find(kScopes.begin(), kScopes.end(), *scope) == kScopes.end()) {
    return Error{"unknown scope '" + *scope + "'; valid scopes: " + message::join(kScopes)};
  }
  f.scope = *scope;
  auto nominal = row.number("nominal_gbps", true, kMinRate, kMaxGbps, "Gbit/s");
  DAGSGD_TRY(nominal);
  auto achievable = row.number("achievable_gbps", true, kMinRate, kMaxGbps, "Gbit/s");
  DAGSGD_TRY(achievable);
  // A collective cannot beat the wire; a larger value is a unit slip (GB/s written as Gbit/s).
  if (*achievable > *nominal) {
    std::ostringstream msg;
    msg << "'achievable_gbps' (" << *achievable << ") exceeds 'nominal_gbps' (" << *nominal << ")";
    return Error{msg.str()};
  }
  f.nominal_bandwidth = *nominal * kBytesPerSecPerGbps;
  f.achievable_bandwidth = *achievable * kBytesPerSecPerGbps;
  auto latency = row.number("latency_us", true, 0, kMaxLatencyUs, "us");
  DAGSGD_TRY(latency);
  f.latency = from_micros(*latency);
  auto eager = row.number("eager_limit_bytes", false, 0, kMaxEagerLimitBytes, "bytes");
  DAGSGD_TRY(eager);
  if (*eager != std::floor(*eager)) return Error{"'eager_limit_bytes' must be a whole number"};
  f.eager_limit = static_cast<Bytes>(*eager);
  auto rendezvous = row.number("rendezvous_latency_us", false, 0, kMaxLatencyUs, "us");
  DAGSGD_TRY(rendezvous);
  if (*rendezvous > 0 && f.eager_limit == 0) {
    return Error{"'rendezvous_latency_us' needs 'eager_limit_bytes' > 0"};
  }
  f.rendezvous_latency = from_micros(*rendezvous);
  auto burst = row.number("burst_bytes", false, 0, kMaxEagerLimitBytes, "bytes");
  DAGSGD_TRY(burst);
  if (*burst != std::floor(*burst)) return Error{"'burst_bytes' must be a whole number"};
  f.burst_bytes = static_cast<Bytes>(*burst);
  if (auto it = j.find("allreduce_measured"); it != j.end()) {
    auto measured = parse_measured(*it);
    DAGSGD_TRY(measured);
    f.measured_allreduce = std::move(*measured);
  }
  // A measured curve already holds what a burst did in the benchmark that measured it.
  if (f.burst_bytes > 0 && !f.measured_allreduce.empty()) {
    return Error{
        "'burst_bytes' and 'allreduce_measured' together: the measured latencies "
        "already include the burst; give one"};
  }
  return f;
}

Expected<Json> parse_json_text(const std::string& text, const std::string& where) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/true);
  if (j.is_discarded()) {
    return Error{"hardware file '" + where +
                 "': not valid JSON: " + json_syntax_error(text, /*allow_comments=*/true)};
  }
  return j;
}

// Rows of a catalog file: {"<key>": [...]}, a bare list, or (fabric files) one object.
Expected<std::vector<const Json*>> catalog_rows(const Json& doc, const std::string& key) {
  std::vector<const Json*> rows;
  const Json* list = nullptr;
  if (doc.is_array()) {
    list = &doc;
  } else if (doc.is_object() && doc.contains(key)) {
    list = &doc[key];
    if (!list->is_array()) return Error{"'" + key + "' must be a list"};
    for (const auto& [k, v] : doc.items()) {
      if (k != key && k != "description") {
        return Error{"unknown top-level field '" + k + "'; valid: description, " + key};
      }
    }
  } else if (doc.is_object() && doc.contains("name")) {
    rows.push_back(&doc);
    return rows;
  } else {
    return Error{"expected an object with a '" + key + "' list, a list, or a single entry"};
  }
  for (const auto& row : *list) rows.push_back(&row);
  return rows;
}

template <class Spec, class Parse>
Expected<std::vector<Spec>> parse_rows(const std::string& text, const std::string& path,
                                       const std::string& key, const std::string& kind,
                                       Parse parse) {
  const std::string file_ctx = "hardware file '" + path + "'";
  auto doc = parse_json_text(text, path);
  DAGSGD_TRY(doc);
  auto rows = catalog_rows(*doc, key);
  if (!rows) return with_context(file_ctx, rows.error());
  std::vector<Spec> out;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < rows->size(); ++i) {
    const Json& row = *(*rows)[i];
    auto spec = parse(row);
    if (!spec) return with_context(file_ctx + ": " + row_context(kind, i, row), spec.error());
    if (!seen.insert(spec->name).second) {
      return Error{file_ctx + ": " + row_context(kind, i, row) + ": duplicate name"};
    }
    out.push_back(std::move(*spec));
  }
  if (out.empty()) return Error{file_ctx + ": no " + kind + " entries"};
  return out;
}

template <class Spec>
NameRegistry registry_of(const std::vector<Spec>& specs, const std::string& kind) {
  std::vector<std::string> names;
  names.reserve(specs.size());
  for (const auto& s : specs) names.push_back(s.name);
  std::sort(names.begin(), names.end());
  return NameRegistry(kind, std::move(names));
}

template <class Spec>
Expected<Spec> find_by_name(const std::vector<Spec>& specs, const std::string& name,
                            const std::string& kind) {
  for (const auto& s : specs) {
    if (s.name == name) return s;
  }
  return registry_of(specs, kind).check(name).error();
}

}  // namespace

nlohmann::ordered_json human_number(double v) {
  std::ostringstream s;
  s.precision(6);
  s << v;
  return nlohmann::ordered_json::parse(s.str());
}

Expected<HardwareCatalog> HardwareCatalog::load_default() {
  return load(data_path("hardware/gpus.json"), data_path("hardware/fabrics.json"));
}

Expected<FabricSpec> find_fabric(const std::string& name,
                                 const std::vector<std::string>& fabric_files) {
  auto catalog = HardwareCatalog::load_default();
  DAGSGD_TRY(catalog);
  for (const auto& f : fabric_files) DAGSGD_TRY(catalog->add_fabric_file(f));
  return catalog->fabric(name);
}

Expected<HardwareCatalog> HardwareCatalog::load(const std::string& gpus_path,
                                                const std::string& fabrics_path) {
  auto gpus = read_file(gpus_path, kMaxDocumentBytes);
  DAGSGD_TRY(gpus);
  auto fabrics = read_file(fabrics_path, kMaxDocumentBytes);
  DAGSGD_TRY(fabrics);
  return parse(*gpus, gpus_path, *fabrics, fabrics_path);
}

Expected<HardwareCatalog> HardwareCatalog::parse(const std::string& gpus_json,
                                                 const std::string& gpus_where,
                                                 const std::string& fabrics_json,
                                                 const std::string& fabrics_where) {
  HardwareCatalog catalog;
  auto gpus = parse_rows<GpuSpec>(gpus_json, gpus_where, "gpus", "gpu", parse_gpu);
  DAGSGD_TRY(gpus);
  catalog.gpus_ = std::move(*gpus);
  auto fabrics =
      parse_rows<FabricSpec>(fabrics_json, fabrics_where, "fabrics", "fabric", parse_fabric);
  DAGSGD_TRY(fabrics);
  catalog.fabrics_ = std::move(*fabrics);
  return catalog;
}

Expected<void> HardwareCatalog::add_fabric_file(const std::string& path) {
  auto text = read_file(path, kMaxDocumentBytes);
  DAGSGD_TRY(text);
  return add_fabric_json(*text, path);
}

Expected<void> HardwareCatalog::add_fabric_json(const std::string& text, const std::string& where) {
  auto fabrics = parse_rows<FabricSpec>(text, where, "fabrics", "fabric", parse_fabric);
  DAGSGD_TRY(fabrics);
  for (auto& f : *fabrics) {
    auto it = std::find_if(fabrics_.begin(), fabrics_.end(),
                           [&](const FabricSpec& g) { return g.name == f.name; });
    if (it != fabrics_.end()) {
      *it = std::move(f);
    } else {
      fabrics_.push_back(std::move(f));
    }
  }
  return ok();
}

Expected<GpuSpec> HardwareCatalog::gpu(const std::string& name) const {
  return find_by_name(gpus_, name, "gpu");
}

NameRegistry HardwareCatalog::gpu_names() const { return registry_of(gpus_, "gpu"); }
NameRegistry HardwareCatalog::fabric_names() const { return registry_of(fabrics_, "fabric"); }

Expected<FabricSpec> HardwareCatalog::fabric(const std::string& name) const {
  return find_by_name(fabrics_, name, "fabric");
}

double link_capacity(const FabricSpec& f) {
  return f.measured_allreduce.empty() ? f.achievable_bandwidth
                                      : std::max(f.achievable_bandwidth, f.nominal_bandwidth);
}

std::string fabric_to_json(const FabricSpec& f) {
  // Ordered, so the entry reads like the catalog rows (name first, source last).
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j["name"] = f.name;
  j["description"] = f.description;
  j["scope"] = f.scope;
  j["nominal_gbps"] = human_number(f.nominal_bandwidth / kBytesPerSecPerGbps);
  j["achievable_gbps"] = human_number(f.achievable_bandwidth / kBytesPerSecPerGbps);
  j["latency_us"] = human_number(to_micros(f.latency));
  if (f.eager_limit > 0) {
    j["eager_limit_bytes"] = f.eager_limit;
    j["rendezvous_latency_us"] = human_number(to_micros(f.rendezvous_latency));
  }
  if (f.burst_bytes > 0) j["burst_bytes"] = f.burst_bytes;
  if (!f.measured_allreduce.empty()) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& m : f.measured_allreduce) {
      // Built apart: a reference into an ordered_json object dies with its next insertion.
      nlohmann::ordered_json sizes = nlohmann::ordered_json::array();
      nlohmann::ordered_json lat = nlohmann::ordered_json::array();
      for (const auto& [bytes, nanos] : m.points) {
        sizes.push_back(bytes);
        lat.push_back(human_number(to_micros(nanos)));
      }
      nlohmann::ordered_json c;
      c["ranks"] = m.ranks;
      c["sizes_bytes"] = std::move(sizes);
      c["latency_us"] = std::move(lat);
      if (!m.algorithm.empty()) c["algorithm"] = m.algorithm;
      auto column = [&c](const char* key, const std::vector<Nanos>& values) {
        if (values.empty()) return;
        nlohmann::ordered_json col = nlohmann::ordered_json::array();
        for (Nanos t : values) col.push_back(human_number(to_micros(t)));
        c[key] = std::move(col);
      };
      column("max_latency_us", m.slowest);
      column("min_latency_us", m.fastest);
      list.push_back(std::move(c));
    }
    j["allreduce_measured"] = std::move(list);
  }
  j["source"] = f.source;
  return j.dump(2);
}

}  // namespace dagsgd::model
