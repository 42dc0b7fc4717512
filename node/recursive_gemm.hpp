// The framework shared by the Strassen-like engines (strassen.cpp, strassen_lowmem.cpp,
// winograd.cpp): operand views with transposition, dynamic peeling of odd dimensions, the
// per-depth workspace allocated once per call (seed 001: no allocation inside the recursion),
// alpha/beta handling, and the choice of the number of levels.
//
// A schedule (strassen.hpp, strassen_lowmem.hpp, winograd.hpp) supplies
//   static constexpr const char* kName;        // the engine's name
//   static constexpr double kPassesPerLevel;   // quarter-size memory passes per level (cost model)
//   static constexpr int kTemps[3];            // temporaries of A-, B- and C-quadrant size
//   static constexpr bool kSumTempsFitC;       // A/B temporaries also serve as C-size outputs
//   step(R&, depth, A, B, C, alpha, accumulate, Temps&)   // the 7 products and their additions
// and optionally, with kStartsOnHalfA = true,
//   step_pending(R&, depth, A, B, C, alpha, accumulate, Temps&, half, wait)
// the same with only k-half `half` of A at hand until wait() (PartlyReadyA),
// and calls r.multiply(depth + 1, ...) for each product and r.combine / R::sums for additions.
// A backend runs the leaves and the additions: CpuBackend (BLAS + OpenMP passes) here,
// the GPU backend (cuBLAS + fused CUDA kernels) in cuda/gpu_strassen.cu, so one schedule serves
// both.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "../src/core/matrix.hpp"
#include "blas.hpp"
#include "engine.hpp"
#include "fused.hpp"
#include "operand.hpp"

namespace distmm {

// Temporaries of one recursion depth: their storage is carved from the call's arena.
template <class T>
struct Temps {
  std::vector<T*> a, b, c;  // A-quadrant, B-quadrant and C-quadrant sized
};

struct RecursionParams {
  int levels = 1;
  index_t cutoff = 256;
};

// Levels and cutoff from the user's options, or from a cost model: each level turns 8 products
// into 7 and adds `passes` quarter-size memory passes (seed 003: the speedup follows the volume
// moved). flops_per_s and bytes_per_s are calibrated once per process (see calibrate()).
struct MachineRates {
  double flops_per_s = 0, bytes_per_s = 0;
};
MachineRates calibrate_rates();  // BLAS rate on a 1024^3 product and a streaming add's bandwidth

// dt sets the bytes per element and the flops per multiply-add (4 real ones for complex types).
int choose_levels(index_t m, index_t n, index_t k, Dtype dt, double passes_per_level,
                  index_t cutoff, const MachineRates& rates);

// Host memory: OpenBLAS for the products, OpenMP passes for the additions.
struct CpuBackend {
  template <class T>
  void gemm(Op ta, Op tb, index_t m, index_t n, index_t k, T alpha, const T* A, index_t lda,
            const T* B, index_t ldb, T beta, T* C, index_t ldc) {
    blas_gemm<T>(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  }
  template <class T, std::size_t NI, std::size_t NO>
  void combine(index_t rows, index_t cols, const std::array<ConstBlock<T>, NI>& in,
               const std::array<MutBlock<T>, NO>& out, const std::array<std::array<T, NI>, NO>& coef) {
    fused_combine<T, NI, NO>(rows, cols, in, out, coef);
  }
  template <class T>
  void scale(index_t rows, index_t cols, T* p, index_t ld, T s) {
    scale_block(rows, cols, p, ld, s);
  }
  // Independent leaf products run one after the other: each BLAS call already uses every core.
  void fork(index_t, index_t, index_t) {}
  void join() {}
};

// Whether a schedule can start its top level on one k-half of A (Schedule::kStartsOnHalfA).
template <class S, class = void>
struct starts_on_half_a : std::false_type {};
template <class S>
struct starts_on_half_a<S, std::void_t<decltype(S::kStartsOnHalfA)>> : std::bool_constant<S::kStartsOnHalfA> {};

template <class T, class Schedule, class Backend = CpuBackend>
class Recursion {
 public:
  // `arena` holds at least workspace_elems(...) elements for the problems it will see.
  Recursion(RecursionParams p, T* arena, Backend& be) : p_(p), arena_(arena), be_(be) {}

  // Elements of workspace for a problem of this logical size (all depths).
  static index_t workspace_elems(index_t m, index_t n, index_t k, int levels, index_t cutoff) {
    index_t total = 0;
    for (int d = 0; d < levels; ++d) {
      if (std::min({m, n, k}) < std::max<index_t>(cutoff, 2)) break;
      m /= 2, n /= 2, k /= 2;
      total += Schedule::kTemps[0] * tsize(m * k, m * n) + Schedule::kTemps[1] * tsize(k * n, m * n) +
               Schedule::kTemps[2] * m * n;
    }
    return total;
  }

  // C = alpha op(A) op(B) + beta C; with `pending`, part of op(A) arrives during the call.
  void gemm(Operand<T> A, Operand<T> B, Target<T> C, T alpha, T beta, const PartlyReadyA* pending = nullptr) {
    carve(C.rows, C.cols, A.cols);
    bool acc = beta != T(0);
    if (acc && beta != T(1)) be_.scale(C.rows, C.cols, C.p, C.ld, beta);
    multiply(0, A, B, C, alpha, acc, pending);
  }

  // C = alpha op(A) op(B) [+ C], at recursion depth `depth` (`pending` at the top alone).
  void multiply(int depth, Operand<T> A, Operand<T> B, Target<T> C, T alpha, bool acc,
                const PartlyReadyA* pending = nullptr) {
    const index_t m = C.rows, n = C.cols, k = A.cols;
    if (depth >= p_.levels || std::min({m, n, k}) < std::max<index_t>(p_.cutoff, 2)) {
      if (pending) pending->wait_rest();
      leaf(A, B, C, alpha, acc);
      return;
    }
    // Dynamic peeling: recurse on the even core, then fix the odd row, column and k-slice.
    const index_t me = m & ~index_t(1), ne = n & ~index_t(1), ke = k & ~index_t(1);
    levels_run_ = std::max(levels_run_, depth + 1);
    // The k-half of the step that the ready columns hold (the peeled column k - 1 belongs to
    // neither, and is read after the step); all of A ready, or no whole half, waits first.
    int half = -1;
    if (pending && starts_on_half_a<Schedule>::value) {
      const index_t r0 = pending->ready_k0, r1 = pending->ready_k1;
      if (r0 <= 0 && r1 >= k) half = -1;
      else if (r0 <= 0 && r1 >= ke / 2) half = 0;
      else if (r0 <= ke / 2 && r1 >= ke) half = 1;
    }
    if (pending && half < 0) pending->wait_rest();
    if constexpr (starts_on_half_a<Schedule>::value) {
      if (half >= 0)
        Schedule::step_pending(*this, depth, A.sub(0, 0, me, ke), B.sub(0, 0, ke, ne), C.sub(0, 0, me, ne), alpha,
                               acc, temps_[depth], half, pending->wait_rest);
    }
    if (half < 0)
      Schedule::step(*this, depth, A.sub(0, 0, me, ke), B.sub(0, 0, ke, ne), C.sub(0, 0, me, ne), alpha, acc,
                     temps_[depth]);
    if (ke < k)  // C_core += alpha A(:, k-1) B(k-1, :)
      leaf(A.sub(0, ke, me, 1), B.sub(ke, 0, 1, ne), C.sub(0, 0, me, ne), alpha, true);
    if (me < m) leaf(A.sub(me, 0, 1, k), B, C.sub(me, 0, 1, n), alpha, acc);
    if (ne < n) leaf(A.sub(0, 0, me, k), B.sub(0, ne, k, 1), C.sub(0, ne, me, 1), alpha, acc);
  }

  // Recursion levels that actually ran (the cutoff and the size may stop short of the levels
  // asked for): what the rounding-error bound of the call depends on.
  int levels_run() const { return levels_run_; }

  // Runs `products`, multiplies at depth `depth` whose outputs are distinct and read by none of
  // the others. When they are leaves (rows x cols x inner each) the backend may run them
  // concurrently (GPU: one stream each); deeper ones share this depth's temporaries, so they
  // run in turn.
  template <class F>
  void independent(int depth, index_t rows, index_t cols, index_t inner, F&& products) {
    const bool leaves = depth >= p_.levels || std::min({rows, cols, inner}) < std::max<index_t>(p_.cutoff, 2);
    if (leaves) be_.fork(rows, cols, inner);
    products();
    if (leaves) be_.join();
  }

  // out_o = [out_o +] sum_t coef[o][t] in_t over rows x cols.
  template <std::size_t NI, std::size_t NO>
  void combine(index_t rows, index_t cols, const std::array<ConstBlock<T>, NI>& in,
               const std::array<MutBlock<T>, NO>& out, const std::array<std::array<T, NI>, NO>& coef) {
    be_.template combine<T, NI, NO>(rows, cols, in, out, coef);
  }

  // Stored-orientation sum of quadrants into a temporary that keeps the operands' op.
  template <std::size_t NI, std::size_t NO>
  void sums(const std::array<Operand<T>, NI>& in, const std::array<T*, NO>& out,
                   const std::array<std::array<T, NI>, NO>& coef) {
    const Operand<T>& r = in[0];
    std::array<ConstBlock<T>, NI> ib;
    std::array<MutBlock<T>, NO> ob;
    for (std::size_t t = 0; t < NI; ++t) ib[t] = in[t].block();
    for (std::size_t o = 0; o < NO; ++o) ob[o] = {out[o], std::max<index_t>(r.stored_rows(), 1), false};
    combine<NI, NO>(r.stored_rows(), r.stored_cols(), ib, ob, coef);
  }
  // out = c_i q_i + c_j q_j for the two non-zero coefficients of `row` (a two-term sum).
  void sum_of_two(const std::array<Operand<T>, 4>& q, const int (&row)[4], T* out) {
    int i = 0;
    while (row[i] == 0) ++i;
    int j = i + 1;
    while (row[j] == 0) ++j;
    sums<2, 1>({q[i], q[j]}, {out}, {{{T(row[i]), T(row[j])}}});
  }
  // A temporary holding a sum of quadrants of `like`, viewed as an operand.
  static Operand<T> temp_operand(T* p, const Operand<T>& like) {
    return {p, std::max<index_t>(like.stored_rows(), 1), like.op, like.rows, like.cols};
  }
  static Target<T> temp_target(T* p, index_t rows, index_t cols) {
    return {p, std::max<index_t>(rows, 1), rows, cols};
  }

 private:
  static index_t tsize(index_t own, index_t csize) {
    return Schedule::kSumTempsFitC ? std::max(own, csize) : own;
  }
  void leaf(Operand<T> A, Operand<T> B, Target<T> C, T alpha, bool acc) {
    be_.template gemm<T>(A.op, B.op, C.rows, C.cols, A.cols, alpha, A.p, A.ld, B.p, B.ld,
                         acc ? T(1) : T(0), C.p, C.ld);
  }
  void carve(index_t m, index_t n, index_t k) {
    temps_.assign(static_cast<std::size_t>(std::max(p_.levels, 0)), {});
    T* at = arena_;
    for (int d = 0; d < p_.levels; ++d) {
      if (std::min({m, n, k}) < std::max<index_t>(p_.cutoff, 2)) break;
      m /= 2, n /= 2, k /= 2;
      for (int t = 0; t < Schedule::kTemps[0]; ++t) temps_[d].a.push_back(at), at += tsize(m * k, m * n);
      for (int t = 0; t < Schedule::kTemps[1]; ++t) temps_[d].b.push_back(at), at += tsize(k * n, m * n);
      for (int t = 0; t < Schedule::kTemps[2]; ++t) temps_[d].c.push_back(at), at += m * n;
    }
  }

  RecursionParams p_;
  T* arena_;
  Backend& be_;
  std::vector<Temps<T>> temps_;
  int levels_run_ = 0;
};

// "levels 3 asked, 1 ran" / "levels auto, 2 ran" / "levels 2": for the report.
inline std::string levels_text(int asked, int ran) {
  const std::string a = asked >= 0 ? std::to_string(asked) : "auto";
  if (asked == ran) return "levels " + a;
  return "levels " + a + (asked >= 0 ? " asked, " : ", ") + std::to_string(ran) + " ran" +
         (asked > ran ? " (the size and --cutoff allow no more)" : "");
}

// A CPU engine around a schedule: levels (fixed or chosen per call), cutoff, threads, the arena.
template <class Schedule>
class RecursiveEngine final : public EngineBase<RecursiveEngine<Schedule>> {
 public:
  // Strassen's identities hold over any ring, so every dtype of the list (complex additions
  // run as real ones over twice the rows, fused.hpp).
  static constexpr DtypeSet kDtypes = DtypeSet::all();

  explicit RecursiveEngine(const EngineOptions& o) : o_(o) { blas_set_threads(o.threads); }
  std::string name() const override { return Schedule::kName; }
  std::string describe() const override {
    return std::string(Schedule::kName) + " (" + levels_text(o_.levels, levels_run_) + ", cutoff " +
           std::to_string(o_.cutoff) + ", " + std::to_string(o_.threads) + " threads, over OpenBLAS)";
  }
  std::size_t workspace_bytes(index_t m, index_t n, index_t k, Dtype dt) const override {
    const int L = levels_for(m, n, k, dt);
    return dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      return static_cast<std::size_t>(Recursion<T, Schedule>::workspace_elems(m, n, k, L, o_.cutoff)) *
             sizeof(T);
    });
  }
  // From the levels that ran, in any call so far, never from those asked for.
  double error_growth() const override { return std::pow(Schedule::kErrorGrowthPerLevel, levels_run_); }
  int levels_run() const override { return levels_run_; }
  // Not from the automatic levels: those rest on this process's own timing (calibrate_rates),
  // which may differ between ranks.
  bool prefers_whole_k(index_t, index_t, index_t, Dtype) const override { return o_.levels != 0; }

  template <class T>
  void run(Op ta, Op tb, index_t m, index_t n, index_t k, T alpha, const T* A, index_t lda,
           const T* B, index_t ldb, T beta, T* C, index_t ldc) {
    if (m <= 0 || n <= 0) return;
    const int levels = levels_for(m, n, k, dtype_of<T>());
    const auto need = static_cast<std::size_t>(
        Recursion<T, Schedule>::workspace_elems(m, n, k, levels, o_.cutoff)) * sizeof(T);
    if (arena_bytes_ < need) arena_ = aligned_alloc_array<unsigned char>(need), arena_bytes_ = need;
    CpuBackend be;
    Recursion<T, Schedule> r({levels, o_.cutoff}, reinterpret_cast<T*>(arena_.get()), be);
    r.gemm({A, lda, ta, m, k}, {B, ldb, tb, k, n}, {C, ldc, m, n}, alpha, beta);
    levels_run_ = std::max(levels_run_, r.levels_run());
  }

 private:
  int levels_for(index_t m, index_t n, index_t k, Dtype dt) const {
    if (o_.levels >= 0) return o_.levels;
    static const MachineRates rates = calibrate_rates();
    return choose_levels(m, n, k, dt, Schedule::kPassesPerLevel, o_.cutoff, rates);
  }
  EngineOptions o_;
  int levels_run_ = 0;  // the most levels any call has run
  AlignedPtr<unsigned char> arena_;  // one workspace for every dtype (64-byte aligned)
  std::size_t arena_bytes_ = 0;
};

// The registry entry of a CPU engine around a schedule.
template <class Schedule>
EngineInfo recursive_engine_info(std::string summary) {
  EngineInfo e = engine_entry<RecursiveEngine<Schedule>>(Schedule::kName, std::move(summary));
  e.recursive = true;
  return e;
}

}  // namespace distmm
