// The names a user picks a software stack by (datasets/stacks/names/names.json): what each
// sourced stack is made of (framework, library, transport), short names for the current defaults
// and FRAMEWORK+LIBRARY compositions; load_stack (stack.h) resolves them.
#pragma once

#include <string>
#include <vector>

#include "dagsgd/model/expected.h"
#include "dagsgd/model/registry.h"

namespace dagsgd::model {

// A collective library over one transport, as the library section of a sourced stack.
struct StackLibrary {
  std::string name;       // "nccl-2.7-socket"
  std::string library;    // "NCCL"
  std::string version;    // "2.7"
  std::string transport;  // "socket (TCP)"
  std::string stack;      // the sourced stack whose library section it is
  std::string changes;    // what it changes, in a few words
};

// A training framework, as the framework section of a sourced stack; its name alone means that
// stack (the framework over the library it was sourced with).
struct StackFramework {
  std::string name;       // "pytorch-ddp"
  std::string framework;  // "PyTorch DDP"
  std::string version;    // "1.5-1.10"
  std::string stack;
  std::string changes;
};

// A short name of a sourced stack ("nccl": nccl-2.7-ib).
struct StackShortName {
  std::string name;
  std::string stack;
  std::string meaning;
};

// What one sourced stack is made of.
struct StackMakeup {
  std::string stack;
  std::string framework;  // a StackFramework name, "" when the stack has no framework
  std::string library;    // a StackLibrary name
  std::string notes;      // what the pair changes beyond its parts ("" if nothing)
  std::string built_for;  // the source it was built for
};

struct StackNames {
  std::vector<StackLibrary> libraries;
  std::vector<StackFramework> frameworks;
  std::vector<StackShortName> short_names;
  std::vector<StackMakeup> stacks;  // every bundled stack, in file-name order

  const StackLibrary* library(const std::string& name) const;
  const StackFramework* framework(const std::string& name) const;
  // Every name --stack takes besides the sourced stacks' own: the frameworks' names, each meaning
  // its stack, then the short names.
  std::vector<StackShortName> choices() const;
};

// datasets/stacks/names/names.json, checked against the bundled stacks: every name it refers to
// exists, every bundled stack is described once, no name means two things.
Expected<StackNames> load_stack_names();
// The same from JSON text; `path` names the file in errors, `bundled` the stacks it may name.
Expected<StackNames> parse_stack_names(const std::string& text, const std::string& path,
                                       const NameRegistry& bundled);

// What a --stack name that is not a stack file's stands for: a sourced stack, or the framework
// of one stack over the library of another.
struct StackChoice {
  std::string stack;            // the sourced stack (when composed: the library's)
  std::string framework_stack;  // composed: the stack whose framework replaces stack's; else ""
  std::string description;      // composed: what the pair is
};
// A short name, a framework name or FRAMEWORK+LIBRARY; an unknown name lists the valid ones.
Expected<StackChoice> resolve_stack_name(const StackNames& names, const std::string& name);

// One line of `dagsgd stack list`.
struct StackRow {
  std::string name;
  std::string framework;  // "PyTorch DDP 1.5-1.10", or "none" (the scenario's grouping)
  std::string library;    // "NCCL 2.7"
  std::string transport;
  std::string changes;  // the library's, the framework's and the pair's own, "; " between
  std::string source;
};
std::vector<StackRow> stack_rows(const StackNames& names);

}  // namespace dagsgd::model
