// Fuzz target: software-stack files (--stack FILE, datasets/stacks), then the stack's allreduce
// priced on two nodes of a 10 Gbit/s link for sizes from one element to a gigabyte, and its
// framework grouping parsed. Whatever the bytes: an Error, or times in range and >= 0.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "dagsgd/model/comm_model.h"
#include "dagsgd/model/ssgd.h"
#include "dagsgd/model/stack.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dagsgd::model;
  auto stack = parse_stack_json(dagsgd::fuzz::text_of(data, size), "fuzz");
  if (!stack.ok()) return 0;
  FUZZ_REQUIRE(validate_stack(*stack).ok());
  if (stack->framework && !stack->framework->grouping.empty()) {
    auto grouping = parse_overlap(stack->framework->grouping);
    FUZZ_REQUIRE(grouping.ok());
    FUZZ_REQUIRE(grouping->bucket_bytes >= 0 && grouping->first_bucket_bytes >= 0 &&
                 grouping->cycle >= 0);
  }
  Topology t;
  t.nodes = 2;
  t.inter.alpha_ns = 20'000;
  t.inter.beta_ns_per_byte = 0.8;
  ExchangeConfig c;
  c.stack = std::make_shared<const StackSpec>(*stack);
  auto m = make_comm_model(t, c);
  if (!m.ok()) return 0;
  for (std::int64_t elements : {std::int64_t{1}, std::int64_t{1} << 10, std::int64_t{1} << 28}) {
    auto time = (*m)->checked_exchange_time(elements);
    if (time.ok()) FUZZ_REQUIRE(*time >= 0 && *time < kMaxDuration);
  }
  return 0;
}
