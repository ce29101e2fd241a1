// The option table of the embeddable commands as JSON (run_cli.h, options_json): what the Python
// module builds its docstrings and keyword checks from, so they list what the parser takes.
#include <nlohmann/json.hpp>

#include "command.h"

namespace dagsgd::tools {

namespace {

// "flag" (no value), "list" (several values, comma-separated) or "value".
const char* option_kind(const CLI::Option& o) {
  if (o.get_items_expected_max() == 0) return "flag";
  if (o.get_items_expected_max() > 1 || o.get_delimiter() != '\0') return "list";
  return "value";
}

nlohmann::ordered_json describe_option(const CLI::Option& o) {
  const std::string type = o.get_type_name();  // e.g. "INT:1..2147483647", "TEXT:FILE"
  nlohmann::ordered_json j;
  j["name"] = o.get_positional() ? o.get_name(true) : "--" + o.get_lnames().front();
  j["positional"] = o.get_positional();
  j["kind"] = option_kind(o);
  j["type"] = type.substr(0, type.find(':'));
  j["checks"] = type.find(':') == std::string::npos ? "" : type.substr(type.find(':') + 1);
  j["existing_file"] = type.find(":FILE") != std::string::npos;
  j["required"] = o.get_required();
  j["default"] = o.get_default_str();
  j["help"] = o.get_description();
  return j;
}

}  // namespace

std::string options_json() {
  CLI::App app{kRootHelp, "dagsgd"};
  Action action;
  add_commands(app, action);
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    nlohmann::ordered_json options = nlohmann::ordered_json::array();
    for (const CLI::Option* o : sub->get_options()) {
      const std::string name = o->get_name();
      if (name == "--help" || name == "--help-all") continue;
      options.push_back(describe_option(*o));
    }
    out[sub->get_name()] = {{"help", sub->get_description()}, {"options", options}};
  }
  return out.dump(1);
}

}  // namespace dagsgd::tools
