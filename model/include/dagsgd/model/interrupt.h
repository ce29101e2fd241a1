// A request, from the program that embeds the commands (the Python module on Ctrl-C), that the
// command running stop: the long loops (the simulation engine, a sweep's scenarios, the trace
// importer's files) check it and return an error, so the call ends within moments.
#pragma once

#include <atomic>

namespace dagsgd::model {

inline std::atomic<bool>& interrupt_flag() {
  static std::atomic<bool> flag{false};
  return flag;
}

// Set by the embedding program; cleared by it before the next command.
inline void request_interrupt(bool on) { interrupt_flag().store(on, std::memory_order_relaxed); }
inline bool interrupt_requested() { return interrupt_flag().load(std::memory_order_relaxed); }

// The message of the error a loop returns when it stops for the request.
inline constexpr const char* kInterruptedMessage = "interrupted";

}  // namespace dagsgd::model
