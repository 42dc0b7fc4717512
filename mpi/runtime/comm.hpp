// A thin, counted layer over MPI. Every word a distributed algorithm moves passes through it,
// so the report can put measured words and messages per rank next to the analytic counts.
//
// Counting convention: a point-to-point message is charged to its sender. A broadcast charges
// `count` words (one message) to every rank except the root, a reduction charges `count` words
// to every rank except the root. In any tree that MPI picks, each non-root of a broadcast receives
// the payload exactly once and each non-root of a reduction sends its partial sum exactly once,
// so totals over ranks are exact whatever the tree, and each transfer is counted once.
#pragma once
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <list>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../../src/core/types.hpp"

namespace distmm {

struct CommCounters {
  std::int64_t words_sent = 0;
  std::int64_t messages_sent = 0;
};
CommCounters& comm_counters();  // this process's counters

// MPI datatypes: the element types from the dtype list (src/core/dtype.hpp), plus the
// integers that bookkeeping sends.
template <class T> MPI_Datatype mpi_type();
#define DISTMM_MPI_TYPE(NAME, TYPE, REAL, LETTER, DESCR, MPI, NCCL) \
  template <> inline MPI_Datatype mpi_type<TYPE>() { return MPI; }
DISTMM_DTYPES(DISTMM_MPI_TYPE)
#undef DISTMM_MPI_TYPE
template <> inline MPI_Datatype mpi_type<std::int64_t>() { return MPI_INT64_T; }
template <> inline MPI_Datatype mpi_type<int>() { return MPI_INT; }
inline MPI_Datatype mpi_type(Dtype d) {
  return dispatch(d, [](auto tag) { return mpi_type<typename decltype(tag)::type>(); });
}

// MPI counts are int: a larger message is a user-facing limit, not a crash.
int mpi_count(index_t n);

class Requests {
 public:
  Requests() = default;
  Requests(const Requests&) = delete;
  Requests& operator=(const Requests&) = delete;
  ~Requests() { wait_all(); }
  void add(MPI_Request r) { reqs_.push_back(r); }
  bool empty() const { return reqs_.empty(); }
  // Arrays a pending collective reads until it completes (MPI-3's nonblocking collectives).
  std::pair<std::vector<int>, std::vector<int>>& keep(std::vector<int> a, std::vector<int> b) {
    kept_.emplace_back(std::move(a), std::move(b));
    return kept_.back();
  }
  void wait_all() {
    if (!reqs_.empty()) MPI_Waitall(static_cast<int>(reqs_.size()), reqs_.data(), MPI_STATUSES_IGNORE);
    reqs_.clear();
    kept_.clear();
  }
  std::size_t size() const { return reqs_.size(); }
  // Waits for the first n requests only; the later ones stay in flight.
  void wait_first(std::size_t n) {
    n = std::min(n, reqs_.size());
    if (n > 0) MPI_Waitall(static_cast<int>(n), reqs_.data(), MPI_STATUSES_IGNORE);
    reqs_.erase(reqs_.begin(), reqs_.begin() + static_cast<std::ptrdiff_t>(n));
    if (reqs_.empty()) kept_.clear();
  }
  // True (and the list cleared) when every request has completed.
  bool test_all() {
    int flag = 1;
    if (!reqs_.empty())
      MPI_Testall(static_cast<int>(reqs_.size()), reqs_.data(), &flag, MPI_STATUSES_IGNORE);
    if (flag) reqs_.clear(), kept_.clear();
    return flag != 0;
  }
  // Lets MPI progress outstanding transfers (Open MPI progresses only inside MPI calls).
  void poke() {
    int flag;
    if (!reqs_.empty())
      MPI_Testall(static_cast<int>(reqs_.size()), reqs_.data(), &flag, MPI_STATUSES_IGNORE);
  }

 private:
  std::vector<MPI_Request> reqs_;
  std::list<std::pair<std::vector<int>, std::vector<int>>> kept_;  // stable addresses
};

// Owns (or borrows, for MPI_COMM_WORLD) a communicator; frees it on destruction.
class Comm {
 public:
  Comm() = default;
  Comm(MPI_Comm c, bool owned) : c_(c), owned_(owned) {
    if (c_ != MPI_COMM_NULL) {
      MPI_Comm_rank(c_, &rank_);
      MPI_Comm_size(c_, &size_);
    }
  }
  static Comm world() { return Comm(MPI_COMM_WORLD, false); }
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  Comm(Comm&& o) noexcept { *this = std::move(o); }
  Comm& operator=(Comm&& o) noexcept {
    if (this != &o) {
      release();
      c_ = std::exchange(o.c_, MPI_COMM_NULL);
      owned_ = std::exchange(o.owned_, false);
      rank_ = o.rank_;
      size_ = o.size_;
    }
    return *this;
  }
  ~Comm() { release(); }

  MPI_Comm get() const { return c_; }
  bool valid() const { return c_ != MPI_COMM_NULL; }
  int rank() const { return rank_; }
  int size() const { return size_; }

  Comm split(int color, int key) const;
  Comm dup() const;

  void barrier() const { MPI_Barrier(c_); }

  template <class T>
  void send(const T* buf, index_t n, int dest, int tag) const {
    count_send(n);
    MPI_Send(buf, mpi_count(n), mpi_type<T>(), dest, tag, c_);
  }
  template <class T>
  void recv(T* buf, index_t n, int src, int tag) const {
    MPI_Recv(buf, mpi_count(n), mpi_type<T>(), src, tag, c_, MPI_STATUS_IGNORE);
  }
  template <class T>
  void isend(const T* buf, index_t n, int dest, int tag, Requests& rq) const {
    count_send(n);
    MPI_Request r;
    MPI_Isend(buf, mpi_count(n), mpi_type<T>(), dest, tag, c_, &r);
    rq.add(r);
  }
  template <class T>
  void irecv(T* buf, index_t n, int src, int tag, Requests& rq) const {
    MPI_Request r;
    MPI_Irecv(buf, mpi_count(n), mpi_type<T>(), src, tag, c_, &r);
    rq.add(r);
  }
  // `blocks` runs of `run` elements, `stride` apart, sent or received in place through an MPI
  // vector type (no packing copy; the type is freed once the transfer is posted, as MPI allows).
  template <class T>
  void isend_strided(const T* buf, index_t blocks, index_t run, index_t stride, int dest, int tag,
                     Requests& rq) const {
    count_send(blocks * run);
    MPI_Datatype t = strided_type(mpi_type<T>(), blocks, run, stride);
    MPI_Request r;
    MPI_Isend(buf, 1, t, dest, tag, c_, &r);
    MPI_Type_free(&t);
    rq.add(r);
  }
  template <class T>
  void irecv_strided(T* buf, index_t blocks, index_t run, index_t stride, int src, int tag,
                     Requests& rq) const {
    MPI_Datatype t = strided_type(mpi_type<T>(), blocks, run, stride);
    MPI_Request r;
    MPI_Irecv(buf, 1, t, src, tag, c_, &r);
    MPI_Type_free(&t);
    rq.add(r);
  }
  static MPI_Datatype strided_type(MPI_Datatype base, index_t blocks, index_t run, index_t stride);
  template <class T>
  void bcast(T* buf, index_t n, int root) const {
    if (rank_ != root) count_send(n);
    MPI_Bcast(buf, mpi_count(n), mpi_type<T>(), root, c_);
  }
  template <class T>
  void ibcast(T* buf, index_t n, int root, Requests& rq) const {
    if (rank_ != root) count_send(n);
    MPI_Request r;
    MPI_Ibcast(buf, mpi_count(n), mpi_type<T>(), root, c_, &r);
    rq.add(r);
  }
  // out may alias nothing; on the root out receives the sum.
  template <class T>
  void reduce_sum(const T* in, T* out, index_t n, int root) const {
    if (rank_ != root) count_send(n);
    MPI_Reduce(rank_ == root && in == out ? MPI_IN_PLACE : in, out, mpi_count(n), mpi_type<T>(),
               MPI_SUM, root, c_);
  }
  // Every rank contributes counts[rank] elements and receives all of them, concatenated in rank
  // order (displacements are the prefix sums). Charged like a broadcast of what a rank lacks:
  // each rank is charged the words it receives from the others, and one message per other
  // contributor.
  template <class T>
  void iallgatherv(const T* send, T* recv, const std::vector<index_t>& counts, Requests& rq) const {
    std::vector<int> c(counts.size()), d(counts.size());
    index_t at = 0, others = 0, senders = 0;
    for (std::size_t r = 0; r < counts.size(); ++r) {
      c[r] = mpi_count(counts[r]), d[r] = mpi_count(at), at += counts[r];
      if (int(r) != rank_ && counts[r] > 0) others += counts[r], ++senders;
    }
    comm_counters().words_sent += others;
    comm_counters().messages_sent += senders;
    MPI_Request req;
    // MPI-3 keeps the count arrays until completion: they live in the request list.
    auto& keep = rq.keep(std::move(c), std::move(d));
    MPI_Iallgatherv(send, keep.first[rank_], mpi_type<T>(), recv, keep.first.data(), keep.second.data(),
                    mpi_type<T>(), c_, &req);
    rq.add(req);
  }
  // Sums `in` (the concatenation of every rank's part, counts[r] elements each) over the ranks
  // and leaves part `rank` in `out`. A ring (P - 1 steps; at step s rank r passes its running
  // sum of part r - s - 1 to rank r + 1 and adds its own contribution to the one it receives):
  // bandwidth-optimal for every P, where MPI libraries often fall back to reduce-then-scatter
  // for rank counts that are not powers of two. `in` is overwritten. Charged to the senders:
  // each rank sends the partial sums of the other ranks' parts once, one message per step.
  template <class T>
  void reduce_scatter(T* in, T* out, const std::vector<index_t>& counts) const {
    const int P = size_;
    std::vector<index_t> at(counts.size() + 1, 0);
    index_t biggest = 0;
    for (std::size_t r = 0; r < counts.size(); ++r) at[r + 1] = at[r] + counts[r], biggest = std::max(biggest, counts[r]);
    std::vector<T> incoming(static_cast<std::size_t>(biggest));
    const int next = (rank_ + 1) % P, prev = (rank_ + P - 1) % P;
    for (int s = 0; s + 1 < P; ++s) {
      const int send_part = ((rank_ - s - 1) % P + P) % P, recv_part = ((rank_ - s - 2) % P + P) % P;
      const index_t ns = counts[send_part], nr = counts[recv_part];
      if (ns > 0) count_send(ns);
      MPI_Sendrecv(in + at[send_part], mpi_count(ns), mpi_type<T>(), next, 31, incoming.data(), mpi_count(nr),
                   mpi_type<T>(), prev, 31, c_, MPI_STATUS_IGNORE);
      T* mine = in + at[recv_part];
      const T* add = incoming.data();
#pragma omp parallel for simd if (nr > (index_t(1) << 16))
      for (index_t e = 0; e < nr; ++e) mine[e] += add[e];
    }
    std::copy(in + at[rank_], in + at[rank_] + counts[rank_], out);
  }

  // Not counted: used by verification and bookkeeping, outside the timed multiply.
  template <class T>
  void allreduce_sum_uncounted(T* inout, index_t n) const {
    MPI_Allreduce(MPI_IN_PLACE, inout, mpi_count(n), mpi_type<T>(), MPI_SUM, c_);
  }
  template <class T>
  T allreduce_max_uncounted(T v) const {
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, mpi_type<T>(), MPI_MAX, c_);
    return v;
  }
  // True on every rank when `flag` is true on any rank: ranks agree before leaving together.
  bool any(bool flag) const;
  // Rank 0's verdict on something only it checked (a file, a path), shared: when `error` is
  // non-empty on rank 0, every rank throws UsageError(error), so all leave together; with
  // `unwritable` (rank 0's), OutputError: an output that cannot be written (exit 1).
  void agree(std::string error, bool unwritable = false) const;
  // Collective: the message of the lowest rank whose `mine` is non-empty (empty on every rank
  // when none failed), so every rank sees the same first failure.
  std::string first_error(const std::string& mine) const;

 private:
  static void count_send(index_t n) {
    comm_counters().words_sent += n;
    comm_counters().messages_sent += 1;
  }
  void release() {
    int finalized = 0;
    MPI_Finalized(&finalized);  // objects outliving MPI_Finalize just let go
    if (owned_ && c_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&c_);
    c_ = MPI_COMM_NULL;
    owned_ = false;
  }
  MPI_Comm c_ = MPI_COMM_NULL;
  bool owned_ = false;
  int rank_ = 0, size_ = 0;
};

// Ranks sharing this node (MPI_Comm_split_type SHARED), for thread and GPU budgets.
int node_local_rank();
int node_local_size();
// The same for the ranks of `comm` only (collective on comm, not on MPI_COMM_WORLD), for code
// that runs on a subset of the world (the ScaLAPACK drop-in's BLACS grids).
int node_local_size(const Comm& comm);

}  // namespace distmm
