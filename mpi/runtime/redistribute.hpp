// Any layout to any layout (layout.hpp): the intersections of the ranks' tiles, packed into one
// all-to-all. Planned once per pair of layouts; executed for any element type and any base
// pointers laid out alike, in any memory space (device_space.hpp): host memory through a host
// space and MPI, a GPU's memory through its space and NCCL (or MPI through pinned memory), the
// same code. Packing and unpacking are the space's strided copies (DeviceSpace::copy_strided) on
// the compute lane, one per rectangle of segments; the exchange is the space communicator's
// all_to_all_v (grouped sends and receives) on the comm lane. A transpose is free (the source's
// layout is transposed(), read with its strides while packing), a conjugate is applied while
// packing, and the receiving side can add into what is there: dst = beta dst + src (beta = 0
// never reads dst). A rank's own share is copied directly, never sent; where no rank sends
// anything the exchange is skipped. The exchange is not counted in comm_counters() (the plan
// reports what moves itself: sent(), MultiplyPlan::moved()).
#pragma once
#include <algorithm>
#include <complex>
#include <type_traits>
#include <vector>

#include "../../src/core/matrix.hpp"
#include "comm.hpp"
#include "device_space.hpp"
#include "layout.hpp"

namespace distmm {

// Elements of one tile of the source meeting one tile of the destination: the product of the
// row and column index pairs, visited columns outer, rows inner (the packing order).
struct TilePair {
  int src_tile = 0, dst_tile = 0;
  std::vector<SegPair> rows, cols;
  static index_t total(const std::vector<SegPair>& s) {
    index_t t = 0;
    for (const SegPair& x : s) t += x.length;
    return t;
  }
  index_t elements() const { return total(rows) * total(cols); }
};

class Redistribution {
 public:
  Redistribution() = default;
  // Collective on comm (src and dst resolved on it, the same rows x cols).
  Redistribution(const ResolvedLayout& src, const ResolvedLayout& dst, const Comm& comm);

  // Elements this rank sends to other ranks, receives from them, and copies to itself.
  index_t sent() const { return sent_; }
  index_t received() const { return received_; }
  index_t kept() const { return kept_; }
  // Whether any rank sends anything (the same on every rank).
  bool moves() const { return moves_; }

  // Buffers a redistribution packs into and receives into, kept between executions (grow-only),
  // in the space's memory.
  struct Scratch {
    DeviceBlock send, recv;
  };
  // Collective over dc (a communicator of sp over the comm the plan was made on): dst (this
  // rank's base pointer in the destination layout) from src (in the source's), both in sp's
  // memory; conj: the conjugate of each element; beta non-null and non-zero: dst = beta dst + src
  // (beta a host value of dt). skip_own: this rank's own share is already in place (nothing
  // copied to itself). Queued on sp's lanes; the compute lane has the result (sp.synchronize()
  // to wait for it on the host).
  void execute_call(DeviceSpace& sp, DeviceComm& dc, Dtype dt, const void* src, void* dst, bool conj,
                    const void* beta, bool skip_own, Scratch& scratch) const;
  template <class T>
  void execute(DeviceSpace& sp, DeviceComm& dc, const T* src, T* dst, Scratch& scratch, bool conj = false,
               const T* beta = nullptr, bool skip_own = false) const {
    execute_call(sp, dc, dtype_of<T>(), src, dst, conj, beta, skip_own, scratch);
  }
  // The same on host memory, in a host space of its own (collective over comm).
  template <class T>
  void execute(const T* src, T* dst, const Comm& comm, bool conj = false, const T* beta = nullptr,
               bool skip_own = false) const {
    execute_host(dtype_of<T>(), src, dst, comm, conj, beta, skip_own);
  }

 private:
  void execute_host(Dtype dt, const void* src, void* dst, const Comm& comm, bool conj, const void* beta,
                    bool skip_own) const;
  RankTiles src_mine_, dst_mine_;
  std::vector<std::vector<TilePair>> send_, recv_;  // per peer; send_[me]: the own copy
  std::vector<index_t> send_count_, recv_count_;
  index_t sent_ = 0, received_ = 0, kept_ = 0;
  bool moves_ = false;
  int me_ = 0;
};

}  // namespace distmm
