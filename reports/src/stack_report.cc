// `dagsgd stack list` as text and JSON (stack_report.h): formatting only, the rows and names come
// from model::stack_rows and model::StackNames.
#include "dagsgd/reports/stack_report.h"

#include <algorithm>
#include <initializer_list>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace dagsgd::reports {
namespace {

using OJson = nlohmann::ordered_json;

std::string pad(const std::string& s, std::size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

// Each entry of `list` as an object of its string members, in the order given.
template <class T>
OJson entries(const std::vector<T>& list,
              std::initializer_list<std::pair<const char*, std::string T::*>> fields) {
  OJson out = OJson::array();
  for (const auto& e : list) {
    OJson o = OJson::object();
    for (const auto& [key, member] : fields) o[key] = e.*member;
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace

std::string stack_list_text(const model::StackNames& names) {
  const auto rows = model::stack_rows(names);
  std::size_t name_w = 5;
  std::size_t framework_w = 9;
  std::size_t library_w = 7;
  for (const auto& r : rows) {
    name_w = std::max(name_w, r.name.size() + 2);
    framework_w = std::max(framework_w, r.framework.size() + 2);
    library_w = std::max(library_w, r.library.size() + 2);
  }
  std::string out = pad("STACK", name_w) + pad("FRAMEWORK", framework_w) +
                    pad("LIBRARY", library_w) + "TRANSPORT\n";
  for (const auto& r : rows) {
    out += pad(r.name, name_w) + pad(r.framework, framework_w) + pad(r.library, library_w) +
           r.transport + "\n";
    out += "    changes: " + r.changes + "\n";
    out += "    source:  " + r.source + "\n";
  }
  const auto choices = names.choices();
  std::size_t short_w = 0;
  for (const auto& c : choices) short_w = std::max(short_w, c.name.size() + 2);
  out += "\nShort names (--stack NAME):\n";
  for (const auto& c : choices) {
    out += "  " + pad(c.name, short_w) + "= " + c.stack + ": " + c.meaning + "\n";
  }
  out +=
      "\nFRAMEWORK+LIBRARY (e.g. --stack pytorch-ddp+nccl-2.7-socket): the framework of the "
      "first\nname's stack over the library of the second's; a pair with a sourced stack of "
      "its own is that stack.\n  frameworks: ";
  for (std::size_t i = 0; i < names.frameworks.size(); ++i) {
    out += (i ? ", " : "") + names.frameworks[i].name;
  }
  out += "\n  libraries:\n";
  std::size_t lib_w = 0;
  for (const auto& l : names.libraries) lib_w = std::max(lib_w, l.name.size() + 2);
  for (const auto& l : names.libraries) {
    out += "    " + pad(l.name, lib_w) + l.library + " " + l.version + ", " + l.transport + "\n";
  }
  return out;
}

std::string stack_list_json(const model::StackNames& names) {
  OJson j;
  j["stacks"] = entries(model::stack_rows(names), {{"name", &model::StackRow::name},
                                                   {"framework", &model::StackRow::framework},
                                                   {"library", &model::StackRow::library},
                                                   {"transport", &model::StackRow::transport},
                                                   {"changes", &model::StackRow::changes},
                                                   {"source", &model::StackRow::source}});
  j["short_names"] = entries(names.choices(), {{"name", &model::StackShortName::name},
                                               {"stack", &model::StackShortName::stack},
                                               {"meaning", &model::StackShortName::meaning}});
  j["frameworks"] = entries(names.frameworks, {{"name", &model::StackFramework::name},
                                               {"framework", &model::StackFramework::framework},
                                               {"version", &model::StackFramework::version},
                                               {"stack", &model::StackFramework::stack},
                                               {"changes", &model::StackFramework::changes}});
  j["libraries"] = entries(names.libraries, {{"name", &model::StackLibrary::name},
                                             {"library", &model::StackLibrary::library},
                                             {"version", &model::StackLibrary::version},
                                             {"transport", &model::StackLibrary::transport},
                                             {"stack", &model::StackLibrary::stack},
                                             {"changes", &model::StackLibrary::changes}});
  return j.dump(2) + "\n";
}

}  // namespace dagsgd::reports
