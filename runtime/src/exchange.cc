// Gradient exchange state machines: each strategy is a chain of non-blocking MPI stages that
// progress() advances, so collectives overlap with backward without a progress thread.
#include "dagsgd/runtime/exchange.h"

#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <limits>

#include "dagsgd/model/check.h"
#include "dagsgd/runtime/clock_sync.h"
#include "dagsgd/runtime/fp16.h"
#include "dagsgd/runtime/topk.h"

namespace dagsgd::runtime {

namespace {

// MPI_Op for elementwise fp16 sums (accumulated in fp32, rounded back per pair).
void half_sum(void* in, void* inout, int* len, MPI_Datatype* /*type*/) {
  auto* a = static_cast<const std::uint16_t*>(in);
  auto* b = static_cast<std::uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = float_to_half(half_to_float(a[i]) + half_to_float(b[i]));
}

int to_int(std::int64_t v) {
  DAGSGD_CHECK(v >= 0 && v <= std::numeric_limits<int>::max());
  return static_cast<int>(v);
}

}  // namespace

struct GradientExchange::Impl {
  struct Op {
    GroupRange range;
    MPI_Comm comm = MPI_COMM_NULL;
    float* data = nullptr;  // start of the group in the caller's buffer
    bool active = false;
    int stage = 0;
    std::int64_t done_ns = 0;
    std::vector<MPI_Request> reqs;
    // Wire buffers, reused across iterations.
    std::vector<std::uint16_t> half;
    std::vector<std::uint16_t> half_recv;
    std::vector<float> fl_recv;
    std::vector<char> bytes_send;
    std::vector<char> bytes_recv;
    std::vector<int> counts;
    std::vector<int> displs;
    std::vector<int> recv_counts;
    std::vector<int> recv_displs;
    TopKCompressor topk;
    std::vector<std::int32_t> idx;
    std::vector<float> val;
    std::int64_t k = 0;
  };

  ExchangeConfig cfg;
  int rank = 0;
  int size = 1;
  MPI_Op half_op = MPI_OP_NULL;
  std::vector<Op> ops;
  int active = 0;

  std::size_t elem_bytes() const { return cfg.precision == Precision::kFp16 ? 2 : 4; }
  MPI_Datatype wire_type() const {
    return cfg.precision == Precision::kFp16 ? MPI_UINT16_T : MPI_FLOAT;
  }
  float inv() const { return 1.0f / static_cast<float>(size); }

  // Buffer on the wire for `op`'s group: the caller's floats or the fp16 copy.
  void* wire(Op& op) {
    return cfg.precision == Precision::kFp16 ? static_cast<void*>(op.half.data())
                                             : static_cast<void*>(op.data);
  }
  void to_wire(Op& op, float scale) {
    auto n = static_cast<std::size_t>(op.range.count);
    if (cfg.precision == Precision::kFp16) {
      op.half.resize(n);
      for (std::size_t i = 0; i < n; ++i) op.half[i] = float_to_half(op.data[i] * scale);
    } else if (scale != 1.0f) {
      for (std::size_t i = 0; i < n; ++i) op.data[i] *= scale;
    }
  }
  void from_wire(Op& op) {
    if (cfg.precision == Precision::kFp16) {
      halves_to_floats(op.half.data(), op.data, static_cast<std::size_t>(op.range.count));
    }
  }

  void chunking(Op& op) {
    // asa, rsag: rank j owns chunk j of the group (sizes differ by at most one element).
    std::int64_t n = op.range.count;
    op.counts.assign(static_cast<std::size_t>(size), 0);
    op.displs.assign(static_cast<std::size_t>(size), 0);
    std::int64_t off = 0;
    for (int j = 0; j < size; ++j) {
      std::int64_t c = n / size + (j < n % size ? 1 : 0);
      op.counts[static_cast<std::size_t>(j)] = to_int(c);
      op.displs[static_cast<std::size_t>(j)] = to_int(off);
      off += c;
    }
  }

  void start(Op& op) {
    op.active = true;
    op.stage = 0;
    op.reqs.clear();
    ++active;
    int n = to_int(op.range.count);
    if (size == 1 && cfg.topk <= 0) {
      // A single rank still pays the precision round trip, so fp16 training behaves the same.
      to_wire(op, 1.0f);
      from_wire(op);
      finish(op);
      return;
    }
    if (cfg.topk > 0) {
      op.topk.select(op.data, op.k, op.idx, op.val);
      std::size_t vb = elem_bytes();
      std::size_t rec = 4 + vb;
      auto k = static_cast<std::size_t>(op.k);
      op.bytes_send.resize(k * rec);
      std::memcpy(op.bytes_send.data(), op.idx.data(), k * 4);
      char* vals = op.bytes_send.data() + k * 4;
      for (std::size_t j = 0; j < k; ++j) {
        if (vb == 2) {
          std::uint16_t h = float_to_half(op.val[j]);
          std::memcpy(vals + j * 2, &h, 2);
        } else {
          std::memcpy(vals + j * 4, &op.val[j], 4);
        }
      }
      op.bytes_recv.resize(k * rec * static_cast<std::size_t>(size));
      op.reqs.resize(1);
      MPI_Iallgather(op.bytes_send.data(), to_int(static_cast<std::int64_t>(k * rec)), MPI_BYTE,
                     op.bytes_recv.data(), to_int(static_cast<std::int64_t>(k * rec)), MPI_BYTE,
                     op.comm, op.reqs.data());
      return;
    }
    switch (cfg.kind) {
      case ExchangeKind::kAllreduce: {
        // Pre-scaling by 1/P keeps fp16 sums in range; fp32 divides after the sum instead.
        to_wire(op, cfg.precision == Precision::kFp16 ? inv() : 1.0f);
        op.reqs.resize(1);
        MPI_Iallreduce(MPI_IN_PLACE, wire(op), n, wire_type(),
                       cfg.precision == Precision::kFp16 ? half_op : MPI_SUM, op.comm,
                       op.reqs.data());
        break;
      }
      case ExchangeKind::kPs: {
        to_wire(op, 1.0f);
        if (rank == 0) {
          // The server (rank 0, which also trains) receives every worker's gradient.
          std::size_t per = static_cast<std::size_t>(n) * elem_bytes();
          op.bytes_recv.resize(per * static_cast<std::size_t>(size - 1));
          op.reqs.resize(static_cast<std::size_t>(size - 1));
          for (int w = 1; w < size; ++w) {
            MPI_Irecv(op.bytes_recv.data() + per * static_cast<std::size_t>(w - 1), n, wire_type(),
                      w, 0, op.comm, &op.reqs[static_cast<std::size_t>(w - 1)]);
          }
        } else {
          // Workers send theirs and post the receive of the average at once.
          std::size_t per = static_cast<std::size_t>(n) * elem_bytes();
          op.bytes_send.resize(per);
          std::memcpy(op.bytes_send.data(), wire(op), per);
          op.reqs.resize(2);
          MPI_Isend(op.bytes_send.data(), n, wire_type(), 0, 0, op.comm, &op.reqs[0]);
          MPI_Irecv(wire(op), n, wire_type(), 0, 1, op.comm, &op.reqs[1]);
        }
        break;
      }
      case ExchangeKind::kAsa: {
        to_wire(op, 1.0f);
        chunking(op);
        int mine = op.counts[static_cast<std::size_t>(rank)];
        op.recv_counts.assign(static_cast<std::size_t>(size), mine);
        op.recv_displs.resize(static_cast<std::size_t>(size));
        for (int j = 0; j < size; ++j) op.recv_displs[static_cast<std::size_t>(j)] = j * mine;
        op.bytes_recv.resize(static_cast<std::size_t>(mine) * static_cast<std::size_t>(size) *
                             elem_bytes());
        op.reqs.resize(1);
        MPI_Ialltoallv(wire(op), op.counts.data(), op.displs.data(), wire_type(),
                       op.bytes_recv.data(), op.recv_counts.data(), op.recv_displs.data(),
                       wire_type(), op.comm, op.reqs.data());
        break;
      }
      case ExchangeKind::kRsag: {
        // Each rank gets the sum of the chunk it owns; fp16 is pre-scaled as for allreduce.
        to_wire(op, cfg.precision == Precision::kFp16 ? inv() : 1.0f);
        chunking(op);
        const auto mine = static_cast<std::size_t>(op.counts[static_cast<std::size_t>(rank)]);
        const bool half = cfg.precision == Precision::kFp16;
        if (half) {
          op.half_recv.resize(std::max<std::size_t>(1, mine));
        } else {
          op.fl_recv.resize(std::max<std::size_t>(1, mine));
        }
        op.reqs.resize(1);
        MPI_Ireduce_scatter(
            wire(op), half ? static_cast<void*>(op.half_recv.data()) : op.fl_recv.data(),
            op.counts.data(), wire_type(), cfg.precision == Precision::kFp16 ? half_op : MPI_SUM,
            op.comm, op.reqs.data());
        break;
      }
    }
  }

  // Called when every request of the current stage completed: local work, then the next stage.
  void advance(Op& op) {
    int n = to_int(op.range.count);
    std::size_t eb = elem_bytes();
    if (cfg.topk > 0) {
      std::size_t k = static_cast<std::size_t>(op.k);
      std::size_t rec = 4 + eb;
      std::fill(op.data, op.data + n, 0.0f);
      for (int r = 0; r < size; ++r) {
        const char* blk = op.bytes_recv.data() + static_cast<std::size_t>(r) * k * rec;
        for (std::size_t j = 0; j < k; ++j) {
          std::int32_t i = 0;
          std::memcpy(&i, blk + j * 4, 4);
          float v = 0;
          if (eb == 2) {
            std::uint16_t h = 0;
            std::memcpy(&h, blk + k * 4 + j * 2, 2);
            v = half_to_float(h);
          } else {
            std::memcpy(&v, blk + k * 4 + j * 4, 4);
          }
          op.data[i] += v;
        }
      }
      for (int i = 0; i < n; ++i) op.data[i] *= inv();
      finish(op);
      return;
    }
    switch (cfg.kind) {
      case ExchangeKind::kAllreduce:
        from_wire(op);
        if (cfg.precision == Precision::kFp32) {
          for (int i = 0; i < n; ++i) op.data[i] *= inv();
        }
        finish(op);
        return;
      case ExchangeKind::kPs:
        if (rank != 0 || op.stage == 1) {
          from_wire(op);
          finish(op);
          return;
        }
        {
          // Server: sum in fp32, average, reply (stage 1) with the value every rank will use.
          std::size_t per = static_cast<std::size_t>(n) * eb;
          for (int w = 1; w < size; ++w) {
            const char* src = op.bytes_recv.data() + per * static_cast<std::size_t>(w - 1);
            for (int i = 0; i < n; ++i) {
              float v = 0;
              if (eb == 2) {
                std::uint16_t h = 0;
                std::memcpy(&h, src + static_cast<std::size_t>(i) * 2, 2);
                v = half_to_float(h);
              } else {
                std::memcpy(&v, src + static_cast<std::size_t>(i) * 4, 4);
              }
              op.data[i] += v;
            }
          }
          to_wire(op, inv());
          from_wire(op);
          op.stage = 1;
          op.reqs.assign(static_cast<std::size_t>(size - 1), MPI_REQUEST_NULL);
          for (int w = 1; w < size; ++w) {
            MPI_Isend(wire(op), n, wire_type(), w, 1, op.comm,
                      &op.reqs[static_cast<std::size_t>(w - 1)]);
          }
        }
        return;
      case ExchangeKind::kRsag:
        if (op.stage == 1) {
          from_wire(op);
          finish(op);
          return;
        }
        {
          // The owned chunk's average into its place, then every owner's chunk to all.
          const int mine = op.counts[static_cast<std::size_t>(rank)];
          const auto off = static_cast<std::size_t>(op.displs[static_cast<std::size_t>(rank)]);
          if (eb == 2) {
            std::copy_n(op.half_recv.begin(), mine,
                        op.half.begin() + static_cast<std::ptrdiff_t>(off));
          } else {
            for (int i = 0; i < mine; ++i) {
              op.data[off + static_cast<std::size_t>(i)] =
                  op.fl_recv[static_cast<std::size_t>(i)] * inv();
            }
          }
          op.stage = 1;
          op.reqs.assign(1, MPI_REQUEST_NULL);
          MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, wire(op), op.counts.data(),
                          op.displs.data(), wire_type(), op.comm, op.reqs.data());
        }
        return;
      case ExchangeKind::kAsa:
        if (op.stage == 1) {
          from_wire(op);
          finish(op);
          return;
        }
        {
          // Sum the chunk this rank owns, then allgather every owner's chunk back to all.
          int mine = op.counts[static_cast<std::size_t>(rank)];
          std::vector<float> acc(static_cast<std::size_t>(mine), 0.0f);
          for (int r = 0; r < size; ++r) {
            for (int i = 0; i < mine; ++i) {
              std::size_t at = static_cast<std::size_t>(r) * static_cast<std::size_t>(mine) +
                               static_cast<std::size_t>(i);
              float v = 0;
              if (eb == 2) {
                std::uint16_t h = 0;
                std::memcpy(&h, op.bytes_recv.data() + at * 2, 2);
                v = half_to_float(h);
              } else {
                std::memcpy(&v, op.bytes_recv.data() + at * 4, 4);
              }
              acc[static_cast<std::size_t>(i)] += v;
            }
          }
          int off = op.displs[static_cast<std::size_t>(rank)];
          for (int i = 0; i < mine; ++i) {
            float v = acc[static_cast<std::size_t>(i)] * inv();
            if (eb == 2) {
              op.half[static_cast<std::size_t>(off) + static_cast<std::size_t>(i)] =
                  float_to_half(v);
            } else {
              op.data[off + i] = v;
            }
          }
          op.stage = 1;
          op.reqs.assign(1, MPI_REQUEST_NULL);
          MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, wire(op), op.counts.data(),
                          op.displs.data(), wire_type(), op.comm, op.reqs.data());
        }
        return;
    }
  }

  void finish(Op& op) {
    op.active = false;
    op.done_ns = now_ns();
    --active;
  }

  void test(Op& op) {
    if (!op.active) return;
    int flag = 0;
    MPI_Testall(static_cast<int>(op.reqs.size()), op.reqs.data(), &flag, MPI_STATUSES_IGNORE);
    if (flag != 0) advance(op);
  }

  void wait(Op& op) {
    while (op.active) {
      MPI_Waitall(static_cast<int>(op.reqs.size()), op.reqs.data(), MPI_STATUSES_IGNORE);
      advance(op);
    }
  }
};

GradientExchange::GradientExchange(ExchangeConfig cfg, std::vector<GroupRange> groups)
    : impl_(std::make_unique<Impl>()) {
  impl_->cfg = cfg;
  MPI_Comm_rank(MPI_COMM_WORLD, &impl_->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &impl_->size);
  if (cfg.precision == Precision::kFp16) MPI_Op_create(&half_sum, 1, &impl_->half_op);
  impl_->ops.resize(groups.size());
  for (std::size_t g = 0; g < groups.size(); ++g) {
    auto& op = impl_->ops[g];
    op.range = groups[g];
    MPI_Comm_dup(MPI_COMM_WORLD, &op.comm);
    if (cfg.topk > 0) {
      op.topk = TopKCompressor(op.range.count);
      op.k = topk_count(op.range.count, cfg.topk);
    }
  }
}

GradientExchange::~GradientExchange() {
  for (auto& op : impl_->ops) {
    if (op.active) impl_->wait(op);
    MPI_Comm_free(&op.comm);
  }
  if (impl_->half_op != MPI_OP_NULL) MPI_Op_free(&impl_->half_op);
}

int GradientExchange::rank() const { return impl_->rank; }
int GradientExchange::ranks() const { return impl_->size; }
int GradientExchange::groups() const { return static_cast<int>(impl_->ops.size()); }

void GradientExchange::start(int g, float* base) {
  auto& op = impl_->ops.at(static_cast<std::size_t>(g));
  DAGSGD_CHECK(!op.active);
  op.data = base + op.range.offset;
  impl_->start(op);
}

void GradientExchange::progress() {
  if (impl_->active == 0) return;
  for (auto& op : impl_->ops) impl_->test(op);
}

bool GradientExchange::in_flight() const { return impl_->active > 0; }
bool GradientExchange::done(int g) const {
  return !impl_->ops.at(static_cast<std::size_t>(g)).active;
}

void GradientExchange::wait(int g) { impl_->wait(impl_->ops.at(static_cast<std::size_t>(g))); }

std::int64_t GradientExchange::completed_ns(int g) const {
  return impl_->ops.at(static_cast<std::size_t>(g)).done_ns;
}

const char* GradientExchange::collective() const {
  if (impl_->cfg.topk > 0) return "allgather";
  return exchange_name(impl_->cfg.kind);
}

const char* GradientExchange::algorithm() const {
  if (impl_->cfg.topk > 0) return "topk_allgather";
  // In the order of ExchangeKind.
  static constexpr const char* kAlgorithms[] = {
      "mpi_iallreduce", "parameter_server", "alltoall_sum_allgather", "reduce_scatter_allgather"};
  const auto i = static_cast<std::size_t>(impl_->cfg.kind);
  return i < std::size(kAlgorithms) ? kAlgorithms[i] : "?";
}

std::int64_t GradientExchange::wire_bytes(int g) const {
  const auto& op = impl_->ops.at(static_cast<std::size_t>(g));
  auto eb = static_cast<std::int64_t>(impl_->elem_bytes());
  if (impl_->cfg.topk > 0) return op.k * (4 + eb);
  return op.range.count * eb;
}

const std::vector<float>& GradientExchange::topk_residual(int g) const {
  return impl_->ops.at(static_cast<std::size_t>(g)).topk.residual();
}

void elastic_average(GradientExchange& ex, float* params, float* center, std::int64_t n,
                     double alpha, std::vector<float>& scratch) {
  DAGSGD_CHECK(ex.groups() == 1);
  scratch.resize(static_cast<std::size_t>(n));
  auto a = static_cast<float>(alpha);
  for (std::int64_t i = 0; i < n; ++i) {
    float d = a * (params[i] - center[i]);
    params[i] -= d;
    scratch[static_cast<std::size_t>(i)] = d;
  }
  ex.start(0, scratch.data());
  ex.wait(0);
  // The exchange averages; the center moves by the sum.
  auto p = static_cast<float>(ex.ranks());
  for (std::int64_t i = 0; i < n; ++i) center[i] += p * scratch[static_cast<std::size_t>(i)];
}

}  // namespace dagsgd::runtime
