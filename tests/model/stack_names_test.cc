// The names a user picks a stack by (stack_names.h): every bundled stack is described, short
// names and FRAMEWORK+LIBRARY resolve to the sourced stacks' sections, and an unknown name or a
// bad names file is refused with the valid names.
#include "dagsgd/model/stack_names.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "common/text.h"
#include "dagsgd/model/stack.h"

namespace dagsgd::model {
namespace {

using dagsgd::testing::contains;

StackNames bundled_names() {
  auto n = load_stack_names();
  EXPECT_TRUE(n.ok()) << (n ? "" : n.error().message);
  return n ? *n : StackNames{};
}

StackSpec loaded(const std::string& name) {
  auto s = load_stack(name);
  EXPECT_TRUE(s.ok()) << name << ": " << (s ? "" : s.error().message);
  return s ? *s : StackSpec{};
}

TEST(StackNames, ListsEveryBundledStackWithItsParts) {
  const auto rows = stack_rows(bundled_names());
  std::vector<std::string> listed;
  for (const auto& r : rows) listed.push_back(r.name);
  EXPECT_EQ(listed, bundled_stacks().names());
  auto ddp = std::find_if(rows.begin(), rows.end(),
                          [](const StackRow& r) { return r.name == "pytorch-ddp-nccl-2.7-ib"; });
  ASSERT_NE(ddp, rows.end());
  EXPECT_EQ(ddp->framework, "PyTorch DDP 1.5-1.10");
  EXPECT_EQ(ddp->library, "NCCL 2.7");
  EXPECT_TRUE(contains(ddp->transport, "ib")) << ddp->transport;
  EXPECT_TRUE(contains(ddp->changes, "ring/tree + LL/LL128/Simple")) << ddp->changes;
  EXPECT_TRUE(contains(ddp->changes, "25 MiB buckets")) << ddp->changes;
  EXPECT_FALSE(ddp->source.empty());
  auto nccl = std::find_if(rows.begin(), rows.end(),
                           [](const StackRow& r) { return r.name == "nccl-2.7-ib"; });
  ASSERT_NE(nccl, rows.end());
  EXPECT_TRUE(contains(nccl->framework, "none")) << nccl->framework;
}

TEST(StackNames, ShortNamesAreTheSourcedStacks) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"pytorch-ddp", "pytorch-ddp-nccl-2.7-ib"},
      {"horovod", "horovod-0.21-nccl-2.7-ib"},
      {"nccl", "nccl-2.7-ib"},
      {"openmpi", "openmpi-4.1-tcp"},
      // A pair with a sourced stack of its own is that stack.
      {"pytorch-ddp+nccl-2.7-ib", "pytorch-ddp-nccl-2.7-ib"},
      {"horovod-0.9+openmpi-4.1-tcp", "horovod-0.9-openmpi-4.1-tcp"},
  };
  for (const auto& [name, stack] : cases) {
    const StackSpec by_name = loaded(name);
    const StackSpec sourced = loaded(stack);
    EXPECT_EQ(by_name.name, stack) << name;
    EXPECT_EQ(by_name.library, sourced.library) << name;
    EXPECT_EQ(by_name.framework, sourced.framework) << name;
    EXPECT_EQ(by_name.sources, sourced.sources) << name;
  }
}

TEST(StackNames, ComposesAFrameworkOverAnotherLibrary) {
  const StackSpec s = loaded("pytorch-ddp+nccl-2.7-socket");
  EXPECT_EQ(s.name, "pytorch-ddp+nccl-2.7-socket");
  EXPECT_EQ(s.library, loaded("nccl-2.7-socket").library);
  const StackSpec ddp = loaded("pytorch-ddp-nccl-2.7-ib");
  EXPECT_EQ(s.framework, ddp.framework);
  EXPECT_EQ(s.source_of("framework.grouping"), ddp.source_of("framework.grouping"));
  EXPECT_TRUE(contains(s.description, "PyTorch DDP")) << s.description;
  EXPECT_TRUE(contains(s.description, "socket")) << s.description;
  // Written out, it reads back as the same stack ('+' is allowed in a file's name).
  auto again = parse_stack_json(stack_to_json(s), "composed.json");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->name, s.name);
  EXPECT_EQ(again->library, s.library);
  EXPECT_EQ(again->framework, s.framework);
}

TEST(StackNames, UnknownNamesListTheValidOnes) {
  auto unknown = load_stack("pytorch");
  ASSERT_FALSE(unknown.ok());
  for (const char* valid : {"unknown stack 'pytorch'", "pytorch-ddp", "horovod", "nccl-socket",
                            "pytorch-ddp-nccl-2.7-ib", "FRAMEWORK+LIBRARY", "nccl-2.7-socket"}) {
    EXPECT_TRUE(contains(unknown.error().message, valid)) << unknown.error().message;
  }
  auto framework = load_stack("pytorch+nccl-2.7-ib");
  ASSERT_FALSE(framework.ok());
  EXPECT_TRUE(contains(framework.error().message, "unknown framework 'pytorch'; valid frameworks"))
      << framework.error().message;
  EXPECT_TRUE(contains(framework.error().message, "tf-keras"));
  auto library = load_stack("horovod+nccl-3");
  ASSERT_FALSE(library.ok());
  EXPECT_TRUE(contains(library.error().message, "unknown library 'nccl-3'; valid libraries"))
      << library.error().message;
  EXPECT_TRUE(contains(library.error().message, "openmpi-4.1-verbs"));
  // A framework sourced over NCCL has no source for what it does around MPI.
  auto kinds = load_stack("pytorch-ddp+openmpi-4.1-tcp");
  ASSERT_FALSE(kinds.ok());
  EXPECT_TRUE(contains(kinds.error().message, "sourced over a \"nccl\" library"))
      << kinds.error().message;
}

TEST(StackNames, BadNamesFilesAreRefused) {
  const NameRegistry bundled("stack", {"a-lib", "b-fw"});
  const std::string lib =
      R"({"name": "lib", "library": "L", "version": "1", "transport": "t", "stack": "a-lib",
          "changes": "c"})";
  const std::string fw =
      R"({"name": "fw", "framework": "F", "version": "2", "stack": "b-fw", "changes": "c"})";
  const std::string stacks =
      R"([{"stack": "a-lib", "library": "lib", "built_for": "s"},
          {"stack": "b-fw", "framework": "fw", "library": "lib", "built_for": "s"}])";
  auto doc = [&](const std::string& frameworks, const std::string& short_names,
                 const std::string& rows) {
    return R"({"schema": "dagsgd-stack-names/1", "libraries": [)" + lib + R"(], "frameworks": [)" +
           frameworks + R"(], "short_names": [)" + short_names + R"(], "stacks": )" + rows + "}";
  };
  ASSERT_TRUE(parse_stack_names(doc(fw, "", stacks), "n.json", bundled).ok());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {doc(fw, R"({"name": "a-lib", "stack": "b-fw", "meaning": "m"})", stacks),
       "short name 'a-lib' is already a stack"},
      {doc(fw, R"({"name": "x", "stack": "c", "meaning": "m"})", stacks),
       "unknown stack 'c'; valid stacks: a-lib, b-fw"},
      {doc(fw, R"({"name": "x", "stack": "a-lib"})", stacks), "missing 'meaning'"},
      {doc(fw, "", R"([{"stack": "a-lib", "library": "lib", "built_for": "s"}])"),
       "'stacks' must describe every bundled stack"},
      {doc(fw, "", R"([{"stack": "a-lib", "library": "nope", "built_for": "s"}])"),
       "unknown library 'nope'"},
      {doc(R"({"name": "f+g", "framework": "F", "version": "2", "stack": "b-fw", "changes": "c"})",
           "", stacks),
       "may not hold '+'"},
  };
  for (const auto& [text, what] : cases) {
    auto n = parse_stack_names(text, "n.json", bundled);
    ASSERT_FALSE(n.ok()) << what;
    EXPECT_TRUE(contains(n.error().message, "stack names file 'n.json'")) << n.error().message;
    EXPECT_TRUE(contains(n.error().message, what)) << n.error().message;
  }
}

}  // namespace
}  // namespace dagsgd::model
