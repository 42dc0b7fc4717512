// Multiply the matrices users already have, where they are (issue #41):
//
//   C = alpha op(A) op(B) + beta C,  op = N, T or C (conjugate transpose),
//
// with A, B and C each in any layout (layout.hpp: block-cyclic, row or column slabs, a list of
// blocks), each in host memory or in each rank's GPU memory (Layout::with_memory(Memory::device)).
// distmm picks the algorithm for the shape and rank count (the registry's
// automatic choice and cost model, or one named), renumbers the algorithm's ranks so that each
// plays the part whose data it already holds most of (COSTA's relabeling: the Hungarian method
// on the P x P overlap volumes, the algorithm built on a communicator split with the permuted
// key), and moves only what is not already where the algorithm wants it: a matrix whose layout
// matches is used in place (no copy), the others go through one all-to-all each
// (redistribute.hpp, op() applied while packing), and C comes back as beta C + the product
// (beta = 0 never reads C).
//
// Plan once for the layouts and the shape, execute many times (any buffers laid out alike):
//
//   distmm::MultiplyPlan plan(comm, Dtype::f64, Op::N, la, Op::T, lb, lc);   // collective
//   plan.algorithm_name(); plan.moved();           // what was chosen, and what it moves
//   plan.execute<double>(1.0, A, B, 0.0, C);       // collective, A, B, C: this rank's base pointers
//
// or in one call: distmm::multiply(comm, alpha, Op::N, A, la, Op::N, B, lb, beta, C, lc).
// Bad layouts (overlapping or missing blocks, lld too small, sizes that do not fit the shape)
// throw std::invalid_argument with the same message on every rank; memories the plan does not
// take (a matrix in host memory on some ranks and device memory on others, device memory without
// CUDA or a GPU engine) MemoryUnsupported. Buffers are allocated by the plan (collective: a rank
// that cannot allocate them fails the plan on every rank, a UsageError with one message), so
// execute() allocates nothing and no rank is left waiting in a collective.
//
// Device memory: the plan binds the algorithm to the engine's device space (a GPU engine's,
// cuda/device_space.cpp; the engine is made on the caller's current GPU, "cublas" unless one is
// named), redistributes in that space (the space's strided copies and its communicator's
// all-to-all: NCCL, or MPI through pinned memory) and multiplies through the algorithm's one
// schedule there (multiply_device): nothing goes through the host. A matrix whose layout
// matches the algorithm's is used in place there too. The buffers must be ready when execute()
// is called (the caller's stream synchronized); execute() returns when C is written.
// MultiplyOptions::emulate_device takes host pointers as the emulated device's memory (a host
// engine; the device path tested without a GPU).
//
// Block-cyclic layouts in host memory: where A, B and C are all block-cyclic (Layout::block_cyclic
// or Layout::scalapack) on one grid of all the communicator's ranks, op(A) = A, op(B) = B, the
// algorithm automatic and options.direct, and the blockings line up as the PDGEMM drop-in needs
// (C's rows on A's process rows, C's columns on B's process columns; block_cyclic_direct.hpp), the
// plan runs the drop-in's schedule on the block-cyclic layout itself: the k-split for k-dominant
// shapes, else SUMMA with wide panels ("block-cyclic k-split" / "block-cyclic summa"), nothing
// redistributed (moved() zero, A, B and C in place). algorithm() then throws (no DistAlgorithm
// runs): algorithm_layout(), error_growth() and strassen_like() answer for either path. These
// schedules allocate their panel buffers (memory_bytes(), within the plan's memory limit) in each
// execute(), as the drop-in does.
//
// Mixed memories: where any matrix is in device memory the plan runs in the device space, and
// each matrix in host memory gets a copy in device memory of this rank's storage of it (its
// layout's local extent, the same offsets): execute() uploads A and B (and C where beta != 0)
// into them, runs as for device memory, and downloads C's tiles back (staged_a/b/c(), counted
// in memory_bytes()). On the emulated device the copies are host copies.
#pragma once
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "../algorithms/algorithm.hpp"
#include "../runtime/comm.hpp"
#include "../runtime/layout.hpp"

namespace distmm {

// Memories the plan does not take: a matrix in host memory on some ranks and device memory on
// others, device memory in a build without CUDA or with a host engine (the C API's
// DISTMM_ERR_UNSUPPORTED).
class MemoryUnsupported : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct MultiplyOptions {
  Algorithm algorithm = Algorithm::automatic;  // or one named (a UsageError where P does not fit)
  AlgoOptions algo;                            // panel, grids, memory limit, ...
  // The local engine (engine_registry), made by the plan; empty: "blas" for host memory,
  // "cublas" for device memory (on the caller's current GPU).
  std::string engine;
  EngineOptions engine_options;
  // Device layouts are host memory seen as an emulated device (DeviceSpace over host memory,
  // a host engine): the device path -- redistribution in the space, the algorithm's device
  // schedule -- run where no GPU is (tests, CI).
  bool emulate_device = false;
  // The emulated device's memory on this rank: 0, the node's available memory over its ranks,
  // which the planner reads and nothing enforces; else that many bytes, enforced as a GPU's (an
  // allocation beyond them fails): tests of running out of device memory. May differ by rank.
  std::size_t emulated_device_bytes = 0;
  Engine* engine_ptr = nullptr;  // or the caller's own engine (it must outlive the plan)
  bool relabel = true;           // false: algorithm rank r is rank r of the communicator
  // Block-cyclic A, B and C used in place by a schedule on that layout (the drop-in's, see
  // MultiplyPlan below); false: always the chosen algorithm's layout, redistributed.
  bool direct = true;
};

// Elements moved between ranks (sent to another rank) per matrix: A and B into the algorithm's
// layout, C's product back.
struct MovedWords {
  index_t a = 0, b = 0, c = 0;
  index_t total() const { return a + b + c; }
};

class MultiplyPlan {
 public:
  // Collective on comm. la describes A as stored (op(A) is m x k), lb B (op(B) is k x n), lc C
  // (m x n); the shape follows from them.
  MultiplyPlan(const Comm& comm, Dtype dtype, Op op_a, const Layout& la, Op op_b, const Layout& lb,
               const Layout& lc, const MultiplyOptions& options = {});
  ~MultiplyPlan();
  MultiplyPlan(MultiplyPlan&&) noexcept;
  MultiplyPlan& operator=(MultiplyPlan&&) noexcept;

  GemmShape shape() const;
  Dtype dtype() const;
  const DistAlgorithm& algorithm() const;
  std::string algorithm_name() const;  // "summa", ... with its layout: algorithm().layout()
  // The algorithm's grid and steps (algorithm().layout(), or the block-cyclic schedule's), the
  // factor on the classical rounding-error bound (the algorithm's times this rank's engine's for
  // the Strassen-like levels it has run so far: 1 for a classical engine, and before the first
  // execute) and whether the algorithm is Strassen-like.
  std::string algorithm_layout() const;
  double error_growth() const;
  bool strassen_like() const;
  // The algorithm's own words and messages (its analytic counts), and bytes per rank at the peak
  // (the algorithm's plus the buffers of the matrices not used in place; the most over ranks).
  CommEstimate words() const;
  std::size_t memory_bytes() const;
  // Redistribution: elements this rank sends to others, and the most / the sum over the ranks.
  MovedWords moved() const;
  MovedWords moved_max() const;
  MovedWords moved_total() const;
  // Whether A, B and C are used where they are on this rank (no copy at all).
  bool in_place_a() const;
  bool in_place_b() const;
  bool in_place_c() const;
  // Where the plan runs (device where any matrix is in device memory), and how the ranks
  // exchange them: "MPI on host memory", "NCCL 2.x (...)", "MPI through host memory (why)".
  Memory memory() const;
  // Whether A, B and C are in host memory in a device plan (mixed memories): copied into the
  // plan's device buffers at each execute (A, B; C where beta != 0) and C copied back.
  bool staged_a() const;
  bool staged_b() const;
  bool staged_c() const;
  std::string transport() const;
  // ranks()[r]: the rank of the communicator that plays the algorithm's rank r.
  const std::vector<int>& ranks() const;
  // Elements of A, B and C (summed over ranks) already on the rank that the algorithm needs
  // them on, with the relabeling and without it (identity): the difference is what it saved.
  index_t held_elements() const;
  index_t held_elements_identity() const;

  // This rank's seconds (MPI_Wtime) in the last execute(): A and B into the algorithm's layout,
  // the algorithm's multiply, and C's way back (with beta C). No collective takes them: each rank
  // times its own parts, the busiest rank's sum is about the execute's time. Device memory: the
  // space is synchronized at the two boundaries (a wait of the host for the GPU's queue, which
  // the algorithm's first transfer waits for anyway), so the parts are the GPU's too. m, n or k
  // 0: the scaling of C counts as the multiply.
  struct ExecuteSeconds {
    double redistribute_in = 0, multiply = 0, redistribute_out = 0;
    double total() const { return redistribute_in + multiply + redistribute_out; }
  };
  ExecuteSeconds last_seconds() const;

  // Collective: C = alpha op(A) op(B) + beta C on this rank's base pointers (the layouts'
  // offsets count from them). T must be the plan's dtype.
  template <class T>
  void execute(nondeduced_t<T> alpha, const T* A, const T* B, nondeduced_t<T> beta, T* C) {
    execute_call(dtype_of<T>(), &alpha, A, B, &beta, C);
  }
  void execute_call(Dtype dt, const void* alpha, const void* A, const void* B, const void* beta, void* C);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Plan and execute once (collective).
template <class T>
void multiply(const Comm& comm, nondeduced_t<T> alpha, Op op_a, const T* A, const Layout& la, Op op_b,
              const T* B, const Layout& lb, nondeduced_t<T> beta, T* C, const Layout& lc,
              const MultiplyOptions& options = {}) {
  MultiplyPlan plan(comm, dtype_of<T>(), op_a, la, op_b, lb, lc, options);
  plan.execute<T>(alpha, A, B, beta, C);
}

}  // namespace distmm
