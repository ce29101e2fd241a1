// The hook through which compute code says which layer and phase it is launching GPU work for;
// the CUPTI collector implements it to attribute kernels, the CUDA MLP calls it.
#pragma once

#include <string>

#include "dagsgd/trace/event.h"

namespace dagsgd::runtime {

class LayerScopeSink {
 public:
  virtual ~LayerScopeSink() = default;
  // Scopes nest per thread; every push is matched by a pop on the same thread.
  virtual void push_layer(const std::string& layer, trace::Phase phase) = 0;
  virtual void pop_layer() = 0;
};

// Pushes on construction and pops on destruction; a null sink does nothing.
class LayerScope {
 public:
  LayerScope(LayerScopeSink* sink, const std::string& layer, trace::Phase phase) : sink_(sink) {
    if (sink_ != nullptr) sink_->push_layer(layer, phase);
  }
  ~LayerScope() {
    if (sink_ != nullptr) sink_->pop_layer();
  }
  LayerScope(const LayerScope&) = delete;
  LayerScope& operator=(const LayerScope&) = delete;

 private:
  LayerScopeSink* sink_;
};

}  // namespace dagsgd::runtime
