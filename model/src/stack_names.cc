// Reading and checking the names a user picks a stack by (stack_names.h), and what a name means:
// the names live in datasets/stacks/names/names.json with their meaning, never in code.
#include "dagsgd/model/stack_names.h"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "dagsgd/model/io.h"
#include "dagsgd/model/paths.h"

namespace dagsgd::model {
namespace {

using Json = nlohmann::json;

constexpr const char* kNamesSchema = "dagsgd-stack-names/1";
constexpr char kCompose = '+';

// Reads the string fields of one entry of a list; errors name the file, the list and the entry.
class EntryReader {
 public:
  EntryReader(const Json& entry, std::string where) : entry_(entry), where_(std::move(where)) {}

  Error error(const std::string& what) const { return Error{where_ + ": " + what}; }

  // Checks that the entry is an object holding only `required` and `optional` fields.
  Expected<void> check(const std::vector<std::string>& required,
                       const std::vector<std::string>& optional) const {
    if (!entry_.is_object()) return error("must be an object");
    for (const auto& [k, v] : entry_.items()) {
      const bool known = std::count(required.begin(), required.end(), k) +
                             std::count(optional.begin(), optional.end(), k) >
                         0;
      if (!known) return error("unknown field '" + k + "'");
    }
    for (const auto& k : required) {
      if (!entry_.contains(k)) return error("missing '" + k + "'");
    }
    return ok();
  }

  // A string field ("" when absent and optional); non-empty when present.
  Expected<std::string> text(const std::string& key) const {
    auto it = entry_.find(key);
    if (it == entry_.end()) return std::string();
    if (!it->is_string() || it->get<std::string>().empty()) {
      return error("'" + key + "' must be a non-empty string");
    }
    return it->get<std::string>();
  }

 private:
  const Json& entry_;
  std::string where_;
};

// Reads list `key` of `doc`: each entry's `fields` (the first `required` of them required) into
// the string members `members` of T, in order.
template <class T>
Expected<std::vector<T>> read_list(const Json& doc, const std::string& key, const std::string& ctx,
                                   const std::vector<std::string>& fields, std::size_t required,
                                   std::vector<std::string T::*> members) {
  auto list = doc.find(key);
  if (list == doc.end() || !list->is_array()) return Error{ctx + ": '" + key + "' must be a list"};
  const std::vector<std::string> req(fields.begin(), fields.begin() + required);
  const std::vector<std::string> opt(fields.begin() + required, fields.end());
  std::vector<T> out;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const EntryReader r((*list)[i], ctx + ": " + key + "[" + std::to_string(i) + "]");
    DAGSGD_TRY(r.check(req, opt));
    T entry;
    for (std::size_t f = 0; f < fields.size(); ++f) {
      auto v = r.text(fields[f]);
      if (!v) return v.error();
      entry.*members[f] = std::move(*v);
    }
    out.push_back(std::move(entry));
  }
  return out;
}

std::string comma_list(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Checks the references and that every name means one thing.
Expected<void> check_names(const StackNames& n, const std::string& ctx,
                           const NameRegistry& bundled) {
  std::set<std::string> taken(bundled.names().begin(), bundled.names().end());
  auto claim = [&](const std::string& name, const std::string& what) -> Expected<void> {
    if (name.find(kCompose) != std::string::npos) {
      return Error{ctx + ": " + what + " '" + name + "' may not hold '+'"};
    }
    if (!taken.insert(name).second) {
      return Error{ctx + ": " + what + " '" + name + "' is already a stack or a short name"};
    }
    return ok();
  };
  auto sourced = [&](const std::string& stack, const std::string& what) -> Expected<void> {
    if (auto c = bundled.check(stack); !c)
      return Error{ctx + ": " + what + ": " + c.error().message};
    return ok();
  };
  std::set<std::string> libraries;
  for (const auto& l : n.libraries) {
    if (!libraries.insert(l.name).second) return Error{ctx + ": library '" + l.name + "' twice"};
    DAGSGD_TRY(sourced(l.stack, "library '" + l.name + "'"));
  }
  for (const auto& f : n.frameworks) {
    DAGSGD_TRY(claim(f.name, "framework"));
    DAGSGD_TRY(sourced(f.stack, "framework '" + f.name + "'"));
  }
  for (const auto& s : n.short_names) {
    DAGSGD_TRY(claim(s.name, "short name"));
    DAGSGD_TRY(sourced(s.stack, "short name '" + s.name + "'"));
  }
  std::vector<std::string> described;
  for (const auto& s : n.stacks) {
    DAGSGD_TRY(sourced(s.stack, "stacks"));
    described.push_back(s.stack);
    if (!s.framework.empty() && !n.framework(s.framework)) {
      return Error{ctx + ": stack '" + s.stack + "': unknown framework '" + s.framework + "'"};
    }
    if (!n.library(s.library)) {
      return Error{ctx + ": stack '" + s.stack + "': unknown library '" + s.library + "'"};
    }
  }
  if (described != bundled.names()) {
    return Error{ctx + ": 'stacks' must describe every bundled stack once, in name order (" +
                 bundled.list() + ")"};
  }
  return ok();
}

std::string framework_label(const StackFramework& f) { return f.framework + " " + f.version; }
std::string library_label(const StackLibrary& l) { return l.library + " " + l.version; }

}  // namespace

const StackLibrary* StackNames::library(const std::string& name) const {
  auto it = std::find_if(libraries.begin(), libraries.end(),
                         [&](const StackLibrary& l) { return l.name == name; });
  return it == libraries.end() ? nullptr : &*it;
}

const StackFramework* StackNames::framework(const std::string& name) const {
  auto it = std::find_if(frameworks.begin(), frameworks.end(),
                         [&](const StackFramework& f) { return f.name == name; });
  return it == frameworks.end() ? nullptr : &*it;
}

std::vector<StackShortName> StackNames::choices() const {
  std::vector<StackShortName> out;
  for (const auto& f : frameworks) {
    std::string meaning = framework_label(f);
    for (const auto& s : stacks) {
      if (s.stack != f.stack) continue;
      if (const StackLibrary* l = library(s.library)) {
        meaning += " over " + library_label(*l) + ", " + l->transport;
      }
    }
    out.push_back({f.name, f.stack, meaning});
  }
  out.insert(out.end(), short_names.begin(), short_names.end());
  return out;
}

Expected<StackNames> parse_stack_names(const std::string& text, const std::string& path,
                                       const NameRegistry& bundled) {
  const std::string ctx = "stack names file '" + path + "'";
  const Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return Error{ctx + ": not a JSON object"};
  auto schema = doc.find("schema");
  if (schema == doc.end() || *schema != kNamesSchema) {
    return Error{ctx + ": 'schema' must be \"" + std::string(kNamesSchema) + "\""};
  }
  StackNames n;
  auto libraries = read_list<StackLibrary>(
      doc, "libraries", ctx, {"name", "library", "version", "transport", "stack", "changes"}, 6,
      {&StackLibrary::name, &StackLibrary::library, &StackLibrary::version,
       &StackLibrary::transport, &StackLibrary::stack, &StackLibrary::changes});
  if (!libraries) return libraries.error();
  n.libraries = std::move(*libraries);
  auto frameworks = read_list<StackFramework>(
      doc, "frameworks", ctx, {"name", "framework", "version", "stack", "changes"}, 5,
      {&StackFramework::name, &StackFramework::framework, &StackFramework::version,
       &StackFramework::stack, &StackFramework::changes});
  if (!frameworks) return frameworks.error();
  n.frameworks = std::move(*frameworks);
  auto short_names = read_list<StackShortName>(
      doc, "short_names", ctx, {"name", "stack", "meaning"}, 3,
      {&StackShortName::name, &StackShortName::stack, &StackShortName::meaning});
  if (!short_names) return short_names.error();
  n.short_names = std::move(*short_names);
  auto stacks = read_list<StackMakeup>(
      doc, "stacks", ctx, {"stack", "library", "built_for", "framework", "notes"}, 3,
      {&StackMakeup::stack, &StackMakeup::library, &StackMakeup::built_for, &StackMakeup::framework,
       &StackMakeup::notes});
  if (!stacks) return stacks.error();
  n.stacks = std::move(*stacks);
  DAGSGD_TRY(check_names(n, ctx, bundled));
  return n;
}

Expected<StackNames> load_stack_names() {
  const std::string path = data_path("stacks/names/names.json");
  auto text = read_file(path);
  if (!text) return text.error();
  return parse_stack_names(*text, path,
                           NameRegistry("stack", json_file_stems(data_path("stacks"))));
}

Expected<StackChoice> resolve_stack_name(const StackNames& names, const std::string& name) {
  for (const auto& c : names.choices()) {
    if (c.name == name) return StackChoice{c.stack, "", ""};
  }
  std::vector<std::string> framework_names;
  for (const auto& f : names.frameworks) framework_names.push_back(f.name);
  std::vector<std::string> library_names;
  for (const auto& l : names.libraries) library_names.push_back(l.name);
  const auto plus = name.find(kCompose);
  if (plus == std::string::npos) {
    std::vector<std::string> valid;
    for (const auto& c : names.choices()) valid.push_back(c.name);
    for (const auto& s : names.stacks) valid.push_back(s.stack);
    return Error{"unknown stack '" + name + "'; valid stacks: " + comma_list(valid) +
                 ", FRAMEWORK+LIBRARY (libraries: " + comma_list(library_names) +
                 "), or a stack file ending in .json ('dagsgd stack list' says what each is)"};
  }
  const std::string fw = name.substr(0, plus);
  const std::string lib = name.substr(plus + 1);
  const StackFramework* f = names.framework(fw);
  if (!f) {
    return Error{"stack '" + name + "': unknown framework '" + fw +
                 "'; valid frameworks: " + comma_list(framework_names)};
  }
  const StackLibrary* l = names.library(lib);
  if (!l) {
    return Error{"stack '" + name + "': unknown library '" + lib +
                 "'; valid libraries: " + comma_list(library_names)};
  }
  // A pair that has its own sourced stack is that stack: what its sources say the pair does
  // beyond its parts (Horovod's host copies around MPI) is kept.
  for (const auto& s : names.stacks) {
    if (s.framework == fw && s.library == lib) return StackChoice{s.stack, "", ""};
  }
  return StackChoice{l->stack, f->stack,
                     framework_label(*f) + " (the framework of stack " + f->stack + ") over " +
                         library_label(*l) + ", " + l->transport + " (the library of stack " +
                         l->stack + ")"};
}

std::vector<StackRow> stack_rows(const StackNames& names) {
  std::vector<StackRow> rows;
  for (const auto& s : names.stacks) {
    const StackLibrary* l = names.library(s.library);
    const StackFramework* f = s.framework.empty() ? nullptr : names.framework(s.framework);
    if (!l) continue;  // parse_stack_names checked every reference
    StackRow row{s.stack,           f ? framework_label(*f) : "none (the scenario's grouping)",
                 library_label(*l), l->transport,
                 l->changes,        s.built_for};
    if (f) row.changes += "; " + f->changes;
    if (!s.notes.empty()) row.changes += "; " + s.notes;
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace dagsgd::model
