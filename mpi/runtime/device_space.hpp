// One rank's GPU as a distributed algorithm sees it when the rank's blocks of A, B and C live
// there (device-resident runs): memory, copies between device buffers, the local engine's one
// gemm call, and communicators whose operations take device buffers -- NCCL where every rank
// has its own GPU and NCCL is found, else MPI through pinned host memory (reported as such).
//
// No CUDA header here: the algorithms in mpi/ see only this interface; its implementation
// (cuda/device_space.cpp) is built with the GPU engines. Work is queued on two lanes of the GPU, the
// engine's stream (compute) and a communication stream (comm), ordered by explicit waits, so
// the next step's transfers run while this step's product does (Cannon's and SUMMA's double
// buffering, as on the host).
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <vector>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "../../node/engine.hpp"
#include "../../src/core/random.hpp"
#include "comm.hpp"
#include "partition.hpp"

namespace distmm {

class DeviceSpace;

// Device memory of one space (RAII); bytes, typed by the caller. Algorithms keep theirs across
// multiplies (reserve()), so a timed multiply allocates nothing; the space outlives them.
class DeviceBlock {
 public:
  DeviceBlock() = default;
  DeviceBlock(DeviceSpace* s, void* p, std::size_t bytes) : s_(s), p_(p), bytes_(bytes) {}
  DeviceBlock(DeviceBlock&& o) noexcept { swap(o); }
  DeviceBlock& operator=(DeviceBlock&& o) noexcept {
    DeviceBlock t(std::move(o));
    swap(t);
    return *this;
  }
  DeviceBlock(const DeviceBlock&) = delete;
  DeviceBlock& operator=(const DeviceBlock&) = delete;
  ~DeviceBlock();
  template <class T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  void swap(DeviceBlock& o) noexcept {
    std::swap(s_, o.s_), std::swap(p_, o.p_), std::swap(bytes_, o.bytes_);
  }
  DeviceSpace* s_ = nullptr;
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

// Collectives and exchanges over one communicator on device buffers, queued on the comm lane.
// Counted as comm.hpp counts (words a rank sends).
class DeviceComm {
 public:
  virtual ~DeviceComm() = default;
  template <class T>
  void broadcast(T* buf, index_t n, int root) {
    broadcast_call(buf, n, dtype_of<T>(), root);
  }
  // Sends n_send elements to dest and receives n_recv from src (a shift).
  template <class T>
  void sendrecv(const T* send, index_t n_send, int dest, T* recv, index_t n_recv, int src) {
    sendrecv_call(send, n_send, dest, recv, n_recv, src, dtype_of<T>());
  }
  // recv (n x size) = every rank's n elements of send, in rank order.
  template <class T>
  void all_gather(const T* send, T* recv, index_t n) {
    all_gather_call(send, recv, n, dtype_of<T>());
  }
  // recv (n) = this rank's block of the sum over ranks of send (n x size).
  template <class T>
  void reduce_scatter_sum(const T* send, T* recv, index_t n) {
    reduce_scatter_call(send, recv, n, dtype_of<T>());
  }
  // The same for parts of different sizes (counts[r] for rank r), each travelling padded to
  // the largest (part r at r * max in the padded buffers), and charged as the unpadded parts
  // are on the host (Comm::iallgatherv, Comm::reduce_scatter: the other ranks' non-empty parts).
  template <class T>
  void all_gather_parts(const T* send, T* padded_recv, const std::vector<index_t>& counts) {
    charged_as(counts, [&](index_t n) { all_gather(send, padded_recv, n); });
  }
  template <class T>
  void reduce_scatter_parts(const T* padded_send, T* recv, const std::vector<index_t>& counts) {
    charged_as(counts, [&](index_t n) { reduce_scatter_sum(padded_send, recv, n); });
  }
  // recv (on root; may be send) = the sum over ranks of send.
  template <class T>
  void reduce_sum(const T* send, T* recv, index_t n, int root) {
    reduce_call(send, recv, n, dtype_of<T>(), root);
  }
  // One-way transfers (the peer calls the other one).
  template <class T>
  void send(const T* buf, index_t n, int dest) {
    sendrecv_call(buf, n, dest, nullptr, 0, -1, dtype_of<T>());
  }
  template <class T>
  void recv(T* buf, index_t n, int src) {
    sendrecv_call(nullptr, 0, -1, buf, n, src, dtype_of<T>());
  }
  virtual void broadcast_call(void* buf, index_t n, Dtype dt, int root) = 0;
  virtual void reduce_call(const void* send, void* recv, index_t n, Dtype dt, int root) = 0;
  virtual void sendrecv_call(const void* send, index_t n_send, int dest, void* recv,
                             index_t n_recv, int src, Dtype dt) = 0;
  virtual void all_gather_call(const void* send, void* recv, index_t n, Dtype dt) = 0;
  virtual void reduce_scatter_call(const void* send, void* recv, index_t n, Dtype dt) = 0;
  // Exchanges (sendrecv, send, recv) between group_start and group_end proceed together: NCCL's
  // groups; through MPI they are queued and posted at once at group_end. Broadcasts may be
  // grouped too (NCCL launches them together; MPI runs each at once, in the call order, which
  // every rank shares); other collectives belong outside groups.
  virtual void group_start() {}
  virtual void group_end() {}
  // Parts of different sizes gathered or summed as they are, where the space takes them
  // (DeviceSpace::takes_uneven_parts).
  // recv = every rank's counts[r] elements, in rank order, contiguous.
  template <class T>
  void all_gather_v(const T* send, T* recv, const std::vector<index_t>& counts) {
    all_gather_v_call(send, recv, counts, dtype_of<T>());
  }
  // recv (counts[rank]) = this rank's part of the sum over ranks of send (the parts in rank
  // order, contiguous); send is scratch, its contents undefined afterwards.
  template <class T>
  void reduce_scatter_v(T* send, T* recv, const std::vector<index_t>& counts) {
    reduce_scatter_v_call(send, recv, counts, dtype_of<T>());
  }
  virtual void all_gather_v_call(const void* send, void* recv, const std::vector<index_t>& counts, Dtype dt) {
    (void)send, (void)recv, (void)counts, (void)dt;
    throw std::logic_error("this communicator takes equal parts only");
  }
  virtual void reduce_scatter_v_call(void* send, void* recv, const std::vector<index_t>& counts, Dtype dt) {
    (void)send, (void)recv, (void)counts, (void)dt;
    throw std::logic_error("this communicator takes equal parts only");
  }
  // Every rank sends send_counts[q] elements to rank q and receives recv_counts[q] from it, the
  // parts contiguous in rank order in send and in recv; this rank's own part is not sent (the
  // caller copies it). Grouped point-to-point transfers on the comm lane: NCCL's grouped
  // ncclSend/ncclRecv, or MPI's nonblocking sends and receives posted together at group_end
  // (the host space, and the GPU's MPI fallback through pinned memory). Counted as sends.
  template <class T>
  void all_to_all_v(const T* send, const std::vector<index_t>& send_counts, T* recv,
                    const std::vector<index_t>& recv_counts) {
    all_to_all_v_call(send, send_counts, recv, recv_counts, dtype_of<T>());
  }
  virtual void all_to_all_v_call(const void* send, const std::vector<index_t>& send_counts, void* recv,
                                 const std::vector<index_t>& recv_counts, Dtype dt) {
    const std::size_t e = size_of(dt);
    std::size_t so = 0, ro = 0;
    group_start();
    for (int q = 0; q < size(); ++q) {
      const index_t ns = send_counts[std::size_t(q)], nr = recv_counts[std::size_t(q)];
      if (q != rank() && (ns > 0 || nr > 0))
        sendrecv_call(static_cast<const char*>(send) + so * e, ns, q, static_cast<char*>(recv) + ro * e, nr, q, dt);
      so += std::size_t(ns), ro += std::size_t(nr);
    }
    group_end();
  }
  virtual int rank() const = 0;
  virtual int size() const = 0;

 private:
  template <class F>
  void charged_as(const std::vector<index_t>& counts, F&& op) {
    const CommCounters before = comm_counters();
    op(counts.empty() ? 0 : *std::max_element(counts.begin(), counts.end()));
    comm_counters() = before;
    for (std::size_t r = 0; r < counts.size(); ++r)
      if (int(r) != rank() && counts[r] > 0) comm_counters().words_sent += counts[r], comm_counters().messages_sent += 1;
  }
};

// A communicator over MPI whose exchanges between group_start and group_end are posted together
// at group_end (as NCCL's group does), so that peers exchanging in different orders do not wait
// for each other: the host space's and the GPU's MPI fallback.
class GroupedMpiComm : public DeviceComm {
 public:
  void sendrecv_call(const void* send, index_t ns, int dest, void* recv, index_t nr, int src, Dtype dt) final {
    queued_.push_back({send, std::max<index_t>(ns, 0), dest, recv, std::max<index_t>(nr, 0), src, dt});
    if (depth_ == 0) flush();
  }
  void group_start() final { ++depth_; }
  void group_end() final {
    if (depth_ > 0 && --depth_ == 0) flush();
  }

 protected:
  struct Transfer {
    const void* send;
    index_t ns;
    int dest;
    void* recv;
    index_t nr;
    int src;
    Dtype dt;
    std::size_t send_bytes() const { return std::size_t(ns) * size_of(dt); }
    std::size_t recv_bytes() const { return std::size_t(nr) * size_of(dt); }
  };
  // Posts the group's transfers (sends and receives, tag 71).
  virtual void post_group(std::vector<Transfer>& group) = 0;

 private:
  void flush() {
    if (!queued_.empty()) post_group(queued_);
    queued_.clear();
  }
  int depth_ = 0;
  std::vector<Transfer> queued_;
};

class DeviceSpace {
 public:
  virtual ~DeviceSpace() = default;
  // How ranks exchange device buffers: "NCCL 2.28.3" or "MPI through host memory (why)".
  virtual std::string transport() const = 0;
  // True for the host emulation (make_emulated_device_space), for what the report says.
  virtual bool emulated() const { return false; }
  // True where the space is host memory (make_host_space, the emulation): its lanes' work is
  // done or in flight when queued, so the host's clock times an algorithm's phases.
  virtual bool on_host() const { return false; }
  // True where the space's communicators take parts of different sizes as they are
  // (DeviceComm::all_gather_v, reduce_scatter_v: MPI's v-collectives); NCCL's take equal parts,
  // so uneven ones travel padded.
  virtual bool takes_uneven_parts() const { return false; }

  virtual DeviceBlock alloc(std::size_t bytes) = 0;  // zero-filled
  template <class T>
  DeviceBlock alloc_elems(index_t n) {
    return alloc(static_cast<std::size_t>(std::max<index_t>(n, 0)) * sizeof(T));
  }
  // A communicator over `comm`'s ranks (collective over it).
  virtual std::unique_ptr<DeviceComm> comm(const Comm& comm) = 0;

  // compute: the engine's stream; comm: the algorithms' transfers between GPUs; transfer: a
  // run's host <-> device copies (upload_async, download_async), which stream a host-resident
  // run's operands in and its C out while the products run.
  enum class Lane { compute, comm, transfer };
  // dst (rows x cols, ld_dst) = src (ld_src), elements of elem_bytes, device to device.
  virtual void copy(void* dst, index_t ld_dst, const void* src, index_t ld_src, index_t rows,
                    index_t cols, std::size_t elem_bytes, Lane lane) = 0;
  template <class T>
  void copy(T* dst, index_t ld_dst, const T* src, index_t ld_src, index_t rows, index_t cols,
            Lane lane) {
    copy(dst, ld_dst, src, ld_src, rows, cols, sizeof(T), lane);
  }
  // y = alpha x + beta y (rows x cols blocks, elements of dt, alpha and beta values of dt; y is
  // not read when beta = 0), on the compute lane.
  virtual void scale_add(void* y, index_t ldy, const void* x, index_t ldx, index_t rows, index_t cols,
                         const void* alpha, const void* beta, Dtype dt) = 0;
  template <class T>
  void scale_add(T* y, index_t ldy, const T* x, index_t ldx, index_t rows, index_t cols, nondeduced_t<T> alpha,
                 nondeduced_t<T> beta) {
    scale_add(static_cast<void*>(y), ldy, static_cast<const void*>(x), ldx, rows, cols, &alpha, &beta, dtype_of<T>());
  }
  // dst(i, j) = src(i, j) for i < rows, j < cols, where element (i, j) of each is at i * row
  // stride + j * column stride (rs, cs): a transpose where one side is row-major. conj: the
  // conjugate of each element (complex types); beta non-null and non-zero: dst(i, j) = beta
  // dst(i, j) + src(i, j) (dst is not read otherwise). beta is a host value of dt. On the lane.
  // The redistribution between layouts (redistribute.hpp) packs and unpacks with it.
  virtual void copy_strided(void* dst, index_t dst_rs, index_t dst_cs, const void* src, index_t src_rs,
                            index_t src_cs, index_t rows, index_t cols, Dtype dt, bool conj, const void* beta,
                            Lane lane) = 0;
  // One pass over n contiguous elements on the compute lane: out[o] = sum_t coef[o][t] in[t]
  // (added into out[o] where accumulate[o]), one input and 1-4 outputs or 1-4 inputs and one
  // output (the GPU engines' fused kernels): CAPS's sums and combinations of quadrants.
  struct Combination {
    int n_in = 0, n_out = 0;
    std::array<const void*, 4> in{};
    std::array<void*, 4> out{};
    std::array<std::array<int, 4>, 4> coef{};
    std::array<bool, 4> accumulate{};
  };
  virtual void combine(index_t n, const Combination& c, Dtype dt) = 0;
  // bytes of p set to zero, on the lane.
  virtual void zero(void* p, std::size_t bytes, Lane lane) = 0;
  // The local engine's product, on the compute lane (device pointers).
  virtual void gemm(const GemmCall& call) = 0;
  // The same while op(A)'s columns outside [ready_k0, ready_k1) still arrive on the comm lane:
  // an engine that can start on the ready ones (gpu-winograd's top level, on a k-half) makes the
  // compute lane wait for the comm lane only where it first needs the rest; any other engine
  // (and the emulated device) waits before it starts.
  virtual void gemm_pending_a(const GemmCall& call, index_t ready_k0, index_t ready_k1) {
    (void)ready_k0, (void)ready_k1;
    compute_waits_for_comm();
    gemm(call);
  }
  template <class T>
  void gemm(Op ta, Op tb, index_t m, index_t n, index_t k, nondeduced_t<T> alpha, const T* A,
            index_t lda, const T* B, index_t ldb, nondeduced_t<T> beta, T* C, index_t ldc, ReuseOfA reuse_a = {}) {
    gemm({dtype_of<T>(), ta, tb, m, n, k, &alpha, A, lda, B, ldb, &beta, C, ldc, reuse_a});
  }
  // An output block that the following products update step after step (SUMMA's panels,
  // Cannon's shifts): a host space whose engine has memory of its own (a GPU staging each
  // product) keeps the block there while the handle lives (Engine::hold_output); a device space
  // has nothing to do.
  class OutputHold {
   public:
    explicit OutputHold(DeviceSpace* s) : s_(s) {}
    OutputHold(OutputHold&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
    OutputHold& operator=(OutputHold&&) = delete;
    ~OutputHold() {
      if (s_) s_->release_output();
    }

   private:
    DeviceSpace* s_;
  };
  template <class T>
  [[nodiscard]] OutputHold hold_output(T* C, index_t rows, index_t cols, index_t ld) {
    hold_output_call(dtype_of<T>(), C, rows, cols, ld);
    return OutputHold(this);
  }
  virtual void hold_output_call(Dtype dt, void* C, index_t rows, index_t cols, index_t ld) {
    (void)dt, (void)C, (void)rows, (void)cols, (void)ld;
  }
  virtual void release_output() {}
  // Ordering between the lanes: the one lane's later work waits for what the other queued so far.
  virtual void comm_waits_for_compute() = 0;
  virtual void compute_waits_for_comm() = 0;
  // Finer ordering: mark(lane, i) records what `lane` has queued so far as marker i (0 to
  // kMarks - 1, reused: a wait sees the latest mark); wait_mark(lane, i) makes `lane`'s later
  // work wait for it. A marker never recorded is no wait.
  // Markers kMarks to kMarks + kRunMarks - 1 belong to the run (run.cpp's streaming), the
  // first kMarks to the algorithm, so neither overwrites a marker the other still waits on.
  static constexpr int kMarks = 8, kRunMarks = 8;
  virtual void mark(Lane lane, int i) = 0;
  virtual void wait_mark(Lane lane, int i) = 0;
  // Seconds from marker `from` to marker `to` as the GPU ran them (both recorded and done).
  virtual double seconds_between(int from, int to) = 0;
  virtual void synchronize() = 0;  // every lane done

  // Host <-> device (synchronous), a rows x cols block with leading dimensions.
  virtual void upload(void* dst, index_t ld_dst, const void* src, index_t ld_src, index_t rows,
                      index_t cols, std::size_t elem_bytes) = 0;
  virtual void download(void* dst, index_t ld_dst, const void* src, index_t ld_src, index_t rows,
                        index_t cols, std::size_t elem_bytes) = 0;
  // What upload/download of a rows x cols block will allocate (a GPU's pinned chunks), taken
  // now, so that the copy itself allocates nothing; nothing where copies need no buffers.
  virtual void reserve_transfers(index_t rows, index_t cols, std::size_t elem_bytes) {
    (void)rows, (void)cols, (void)elem_bytes;
  }
  // The same queued on the transfer lane, returning at once: the host memory must stay as it is
  // until the lane is past the copy (mark / wait_mark order it with the other lanes). From
  // pinned memory (pin_host) the copy engine moves it at the link's rate beside the products;
  // from pageable memory the driver stages it, slower.
  virtual void upload_async(void* dst, index_t ld_dst, const void* src, index_t ld_src, index_t rows,
                            index_t cols, std::size_t elem_bytes) = 0;
  virtual void download_async(void* dst, index_t ld_dst, const void* src, index_t ld_src, index_t rows,
                              index_t cols, std::size_t elem_bytes) = 0;
  // Page-locks [p, p + bytes) of host memory while the returned handle lives (what a caller of
  // cuBLASXt gives it: pinned host matrices). False where the system refuses (locked-memory
  // limits): the copies still work, staged by the driver.
  class HostPin {
   public:
    HostPin() = default;
    HostPin(DeviceSpace* s, void* p) : s_(s), p_(p) {}
    HostPin(HostPin&& o) noexcept : s_(std::exchange(o.s_, nullptr)), p_(std::exchange(o.p_, nullptr)) {}
    HostPin& operator=(HostPin&& o) noexcept {
      HostPin t(std::move(o));
      std::swap(s_, t.s_), std::swap(p_, t.p_);
      return *this;
    }
    ~HostPin() {
      if (s_ && p_) s_->unpin_host(p_);
    }
    explicit operator bool() const { return p_ != nullptr; }

   private:
    DeviceSpace* s_ = nullptr;
    void* p_ = nullptr;
  };
  virtual HostPin pin_host(void* p, std::size_t bytes) = 0;
  // p[i + j ld] = element (row0 + i, col0 + j) of the global random matrix, as the host
  // generator gives it (src/core/random.hpp).
  virtual void fill_random(void* p, index_t ld, index_t rows, index_t cols, index_t row0,
                           index_t col0, std::uint64_t seed, Stream s, Fill fill, Dtype dt) = 0;
  // For Freivalds' check: y[r] += sum_c M(r, c) x[c] and ya[r] += sum_c |M(r, c)| xa[c], in
  // double, M a device block, x, xa, y, ya host vectors of its cols and rows; x holds 2 doubles
  // (re, im) per entry when x_complex, y when dt is complex or x_complex.
  virtual void matvec(const void* M, index_t ld, index_t rows, index_t cols, Dtype dt,
                      const double* x, bool x_complex, const double* xa, double* y, double* ya) = 0;
  // For the normwise bound of a Strassen-like product: an upper bound of max |M(r, c)| over a
  // device block (for complex entries max |re| + |im|, at most sqrt 2 above the modulus).
  virtual double max_abs(const void* M, index_t ld, index_t rows, index_t cols, Dtype dt) = 0;
  // Free device memory now, and the bytes a gemm of this shape needs besides its operands.
  virtual std::size_t free_bytes() const = 0;
  virtual std::size_t engine_workspace(index_t m, index_t n, index_t k, Dtype dt) const = 0;

 protected:
  friend class DeviceBlock;
  virtual void release(void* p) noexcept = 0;
  virtual void unpin_host(void* p) noexcept = 0;
};

inline DeviceBlock::~DeviceBlock() {
  if (p_ && s_) s_->release(p_);
}

// b holds at least `bytes` (reallocated only to grow).
inline void reserve(DeviceSpace& s, DeviceBlock& b, std::size_t bytes) {
  if (b.bytes() < bytes) b = DeviceBlock(), b = s.alloc(bytes);
}

// A rank's piece of a global matrix in its GPU's memory (DistMatrix's device twin), stored
// column-major with ld = max(piece rows, 1) in its own block, or at a given place (ld given)
// inside memory that outlives it (DistAlgorithm::device_home).
struct DeviceDistMatrix {
  index_t rows = 0, cols = 0;  // global
  Piece piece;
  index_t ld = 1;
  DeviceBlock mem;
  void* place = nullptr;  // where it lives when not in mem (memory it does not own)
  DeviceDistMatrix() = default;
  DeviceDistMatrix(DeviceSpace& s, index_t r, index_t c, Piece p, std::size_t elem_bytes)
      : rows(r), cols(c), piece(std::move(p)), ld(std::max<index_t>(piece.rows(), 1)),
        mem(s.alloc(static_cast<std::size_t>(piece.rows() * piece.cols()) * elem_bytes)) {}
  DeviceDistMatrix(index_t r, index_t c, Piece p, void* at, index_t ld_at)
      : rows(r), cols(c), piece(std::move(p)), ld(ld_at), place(at) {}
  template <class T>
  T* data() const {
    return place ? static_cast<T*>(place) : mem.as<T>();
  }
};

// A k = 0 product only scales C (a rank holding no k, e.g. cuboid's pk > k), but its empty
// blocks' leading dimensions (1) are below what BLAS and cuBLAS check even then: raised here.
inline GemmCall with_checked_lds(GemmCall c) {
  if (c.k == 0) {
    c.lda = std::max<index_t>(c.lda, c.ta == Op::N ? c.m : 1);
    c.ldb = std::max<index_t>(c.ldb, c.tb == Op::N ? 1 : c.n);
  }
  return c;
}

// One step's operands of a device-resident product (blocks and their leading dimensions): the
// double-buffered steps of SUMMA and cuboid keep two.
template <class T>
struct StepOperands {
  const T* a = nullptr;
  index_t lda = 1;
  const T* b = nullptr;
  index_t ldb = 1;
};

// The device space of `engine` (a GPU engine) on this rank; collective over world, which
// decides together whether NCCL is used (every rank has NCCL, ranks_per_gpu, from
// ranks_sharing_gpu, is 1, DISTMM_DEVICE_COMM is not "mpi"). Null on every rank when the engine is a host engine or
// distmm was built without CUDA.
std::unique_ptr<DeviceSpace> make_device_space(Engine& engine, const Comm& world, int ranks_per_gpu);
// An emulated device (host_space.cpp): the same interface over host memory and a host engine,
// every lane's work done at once; free_bytes() gives `free_bytes`. For testing the device paths
// where no GPU is (RunSpec::emulate_device). enforced: the budget is the device's memory, as a
// GPU's is (an allocation beyond what is left throws a UsageError, free_bytes() is what is left:
// tests of running out); otherwise it is only what the planners read.
std::unique_ptr<DeviceSpace> make_emulated_device_space(Engine& engine, std::size_t free_bytes,
                                                        bool enforced = false);
// Host memory and `engine` (any engine: a GPU engine stages each product) as a space: where
// every host run's schedule runs (host_space.cpp).
std::unique_ptr<DeviceSpace> make_host_space(Engine& engine);
// The most ranks of `world` that share one GPU (the current device of each rank, by host and
// PCI bus); collective. 1 without CUDA.
int ranks_sharing_gpu(const Comm& world);

}  // namespace distmm
