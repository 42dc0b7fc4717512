// multiply() on the callers' layouts (mpi/api/multiply.hpp): every pair of layout kinds for A, B
// and C, every dtype and op, alpha and beta (beta = 0 on a NaN-filled C), odd shapes down to 1,
// a plan executed several times, matching layouts used in place (nothing moves), rotated ones
// relabeled, and bad layouts refused on every rank. Inputs are small integers, so every element
// of C is checked exactly against a product each rank computes for the elements it holds.
//
// Each case runs in three memories (MultiplyIn's parameter): host memory; the emulated device
// (device layouts over host pointers, MultiplyOptions::emulate_device: the device path --
// redistribution in the space, the algorithm's device schedule -- on the host, in CI); and the
// rank's GPU (Gpu/..., skipped where a node has fewer GPUs than ranks: tests/cuda/gpu_tests.sh
// runs them at 1, 2 and 4 ranks on a GPU machine). On a device, the mixed memories (some of A, B
// and C in host memory, staged through the device's) run too.
#include <algorithm>
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <limits>
#include <stdexcept>

#include "cuda/device_info.hpp"
#include "mpi/api/multiply.hpp"
#include "mpi/runtime/device_space.hpp"
#include "mpi/runtime/distribution.hpp"
#include "mpi_test_util.hpp"
#include "runtime/layout_test_util.hpp"

namespace distmm {
namespace {

using testing::as_scalar;
using testing::make_layout;
using testing::value;

template <class T>
T op_value(Op o, int seed, index_t i, index_t j) {  // element (i, j) of op(X), X(i, j) = value(seed, i, j)
  if (o == Op::N) return value<T>(seed, i, j);
  const T v = value<T>(seed, j, i);
  if constexpr (is_complex_v<T>) return o == Op::C ? std::conj(v) : v;
  else return v;
}

// Where the test's matrices live.
enum class Where { host, emulated, gpu };
Where where = Where::host;  // the running test's (MultiplyIn's parameter)
void PrintTo(Where w, std::ostream* os) { *os << (w == Where::host ? "host" : w == Where::emulated ? "emulated" : "gpu"); }

// dev false: the matrix stays in host memory (mixed memories, where the test runs on a device).
Layout placed(const Layout& l, bool dev = true) {
  return where == Where::host || !dev ? l : l.with_memory(Memory::device);
}
MultiplyOptions placed(MultiplyOptions o) {
  o.emulate_device = where == Where::emulated;
  return o;
}

// The GPU's space for the test's own buffers (never destroyed: it would outlive MPI and CUDA).
DeviceSpace& gpu_space() {
  static DeviceSpace* sp = [] {
    EngineOptions eo;
    eo.device = node_local_rank();
    Engine* e = make_engine("cublas", eo).release();  // makes its GPU current
    return make_device_space(*e, Comm::world(), ranks_sharing_gpu(Comm::world())).release();
  }();
  return *sp;
}

// A rank's storage of one matrix where the test runs: the vector itself, or a GPU copy of it
// (on_gpu false: the vector, a matrix left in host memory).
template <class T>
struct Stored {
  std::vector<T>& host;
  DeviceBlock dev;
  explicit Stored(std::vector<T>& h, bool on_gpu = true) : host(h) {
    if (where != Where::gpu || !on_gpu) return;
    dev = gpu_space().alloc_elems<T>(index_t(h.size()));
    gpu_space().upload(dev.as<T>(), index_t(h.size()), h.data(), index_t(h.size()), index_t(h.size()), 1, sizeof(T));
  }
  T* ptr() { return dev.as<T>() ? dev.as<T>() : host.data(); }
  void back() {
    if (dev.as<T>())
      gpu_space().download(host.data(), index_t(host.size()), dev.as<T>(), index_t(host.size()), index_t(host.size()), 1,
                           sizeof(T));
  }
};

// Fills A, B and C in their layouts, executes the plan, and counts the elements of C (over all
// ranks) that differ from alpha op(A) op(B) + beta C. nan_c: C starts as NaN (beta must be 0).
// on_device: bit i set where matrix i (A, B, C) is in device memory (the others in host memory).
template <class T>
int check_multiply(MultiplyPlan& plan, Op oa, const Layout& la, Op ob, const Layout& lb, const Layout& lc,
                   std::complex<double> alpha, std::complex<double> beta, int seed = 0, bool nan_c = false,
                   int on_device = 7) {
  Comm world = Comm::world();
  const int me = world.rank();
  const GemmShape s = plan.shape();
  const ResolvedLayout ra = resolve(la, world, "A"), rb = resolve(lb, world, "B"), rc = resolve(lc, world, "C");
  const T pad(-7);
  auto A = testing::local_storage<T>(ra, me, [&](index_t i, index_t j) { return value<T>(seed + 1, i, j); }, pad);
  auto B = testing::local_storage<T>(rb, me, [&](index_t i, index_t j) { return value<T>(seed + 2, i, j); }, pad);
  const T nan(std::numeric_limits<real_t<T>>::quiet_NaN());
  auto c0 = [&](index_t i, index_t j) { return nan_c ? nan : value<T>(seed + 3, i, j); };
  auto C = testing::local_storage<T>(rc, me, c0, pad);
  const std::vector<T> A0 = A, B0 = B;
  const T al = as_scalar<T>(alpha), be = as_scalar<T>(beta);
  {
    Stored<T> a(A, on_device & 1), b(B, on_device & 2), c(C, on_device & 4);
    plan.execute<T>(al, a.ptr(), b.ptr(), be, c.ptr());
    a.back(), b.back(), c.back();
  }
  int bad = A != A0 || B != B0;  // the inputs are never written
  std::vector<T> seen = C;
  testing::for_each_held(rc.ranks[std::size_t(me)], [&](index_t i, index_t j, index_t at) {
    T sum(0);
    for (index_t l = 0; l < s.k; ++l) sum += op_value<T>(oa, seed + 1, i, l) * op_value<T>(ob, seed + 2, l, j);
    const T want = al * sum + (be == T(0) ? T(0) : be * c0(i, j));
    bad += C[std::size_t(at)] != want;
    seen[std::size_t(at)] = pad;
  });
  for (const T& e : seen) bad += !(e == pad);  // padding untouched
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_SUM, world.get());
  return bad;
}

Op op_of(int i) { return i == 0 ? Op::N : i == 1 ? Op::T : Op::C; }

// One multiply with A, B, C of kinds ka, kb, kc (variants from v) on m x n x k; on_device as
// check_multiply's (on a device; host memory has all three there).
template <class T>
int multiply_case(index_t m, index_t n, index_t k, Op oa, Op ob, int ka, int kb, int kc, int v,
                  std::complex<double> alpha, std::complex<double> beta, const MultiplyOptions& o = {},
                  bool nan_c = false, int on_device = 7) {
  Comm world = Comm::world();
  const int P = world.size(), me = world.rank();
  const Layout la = placed(oa == Op::N ? make_layout(ka, v, m, k, P, me) : make_layout(ka, v, k, m, P, me), on_device & 1);
  const Layout lb =
      placed(ob == Op::N ? make_layout(kb, v + 1, k, n, P, me) : make_layout(kb, v + 1, n, k, P, me), on_device & 2);
  const Layout lc = placed(make_layout(kc, v + 2, m, n, P, me), on_device & 4);
  MultiplyPlan plan(world, dtype_of<T>(), oa, la, ob, lb, lc, placed(o));
  EXPECT_EQ(plan.memory(), where == Where::host || on_device == 0 ? Memory::host : Memory::device);
  const bool device_plan = where != Where::host && on_device != 0, full = m > 0 && n > 0 && k > 0;
  EXPECT_EQ(plan.staged_a(), device_plan && full && !(on_device & 1));  // A and B are not read where k = 0
  EXPECT_EQ(plan.staged_b(), device_plan && full && !(on_device & 2));
  EXPECT_EQ(plan.staged_c(), device_plan && !(on_device & 4));
  return check_multiply<T>(plan, oa, la, ob, lb, lc, alpha, beta, v, nan_c, on_device);
}

class MultiplyIn : public ::testing::TestWithParam<Where> {
 protected:
  void SetUp() override {
    where = GetParam();
    if (where == Where::gpu && gpu_count() < node_local_size())  // the same on every rank of a node
      GTEST_SKIP() << "fewer GPUs than ranks on this node (" << gpu_summary() << ")";
    if (where == Where::gpu) gpu_space();  // each rank's GPU current before a plan takes it (collective)
  }
  void TearDown() override { where = Where::host; }
};
INSTANTIATE_TEST_SUITE_P(Host, MultiplyIn, ::testing::Values(Where::host));
INSTANTIATE_TEST_SUITE_P(EmulatedDevice, MultiplyIn, ::testing::Values(Where::emulated));
INSTANTIATE_TEST_SUITE_P(Gpu, MultiplyIn, ::testing::Values(Where::gpu));

TEST_P(MultiplyIn, EveryPairOfLayoutKinds) {
  // Every triple of kinds up to 4 ranks; above, where each plan's collectives cost more on a small
  // machine, a Latin square (kc = ka + kb mod 4): still every pair of kinds for any two matrices.
  const bool all = Comm::world().size() <= 4;
  int c = 0;
  for (int ka = 0; ka < 4; ++ka)
    for (int kb = 0; kb < 4; ++kb)
      for (int kc = 0; kc < 4; ++kc, ++c)
        if (all || kc == (ka + kb) % 4)
          EXPECT_EQ(multiply_case<double>(7, 5, 3, op_of(c % 2), op_of((c / 2) % 2), ka, kb, kc, c % 3, 2.0, -1.0), 0)
              << testing::kind_name(ka) << " " << testing::kind_name(kb) << " " << testing::kind_name(kc) << " case " << c;
}

template <class T>
void every_op(int dt) {
  struct Shape {
    index_t m, n, k;
  };
  const Shape shapes[] = {{1, 1, 1}, {13, 1, 11}, {2, 17, 5}, {5, 7, 1}, {11, 3, 13}};
  // Every pair of ops per type up to 4 ranks; above, three per type (all nine over the types).
  const bool all = Comm::world().size() <= 4;
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b) {
      const int c = dt * 9 + a * 3 + b, d = dt * 3 + a;
      if (!all && b != (d / 3 + d) % 3) continue;
      const Shape s = shapes[c % 5];
      EXPECT_EQ(multiply_case<T>(s.m, s.n, s.k, op_of(a), op_of(b), c % 4, (c + 1) % 4, (c + 2) % 4, c % 2,
                                 {1.0, 2.0}, {-2.0, 1.0}),
                0)
          << "ops " << a << b << " shape " << s.m << " x " << s.n << " x " << s.k;
    }
}
TEST_P(MultiplyIn, F32EveryOp) { every_op<float>(0); }
TEST_P(MultiplyIn, F64EveryOp) { every_op<double>(1); }
TEST_P(MultiplyIn, C32EveryOp) { every_op<std::complex<float>>(2); }
TEST_P(MultiplyIn, C64EveryOp) { every_op<std::complex<double>>(3); }

TEST_P(MultiplyIn, BetaZeroNeverReadsC) {
  for (int kc = 0; kc < 4; ++kc) {
    if (Comm::world().size() > 4 && kc % 2) continue;
    EXPECT_EQ(multiply_case<double>(6, 5, 4, Op::N, Op::T, (kc + 1) % 4, kc, kc, kc, 3.0, 0.0, {}, true), 0) << kc;
    EXPECT_EQ(multiply_case<std::complex<float>>(3, 7, 2, Op::C, Op::N, kc, 3 - kc, kc, kc, {0, 1}, 0.0, {}, true), 0) << kc;
  }
}

TEST_P(MultiplyIn, EachAlgorithmNamed) {
  for (Algorithm a : {Algorithm::summa, Algorithm::cannon, Algorithm::dns, Algorithm::cuboid, Algorithm::caps}) {
    MultiplyOptions o;
    o.algorithm = a;
    try {
      EXPECT_EQ(multiply_case<double>(9, 7, 8, Op::T, Op::N, 0, 1, 3, 1, 1.0, 1.0, o), 0) << to_string(a);
    } catch (const UsageError&) {  // the rank count does not fit it (every rank alike)
    }
  }
}

TEST_P(MultiplyIn, PlanReusedForSeveralExecutes) {
  Comm world = Comm::world();
  const int P = world.size(), me = world.rank();
  const Layout la = placed(make_layout(0, 2, 7, 3, P, me)), lb = placed(make_layout(3, 0, 3, 11, P, me)),
               lc = placed(make_layout(1, 1, 7, 11, P, me));
  MultiplyPlan plan(world, Dtype::c64, Op::N, la, Op::N, lb, lc, placed(MultiplyOptions{}));
  for (int rep = 0; rep < 3; ++rep)
    EXPECT_EQ(check_multiply<std::complex<double>>(plan, Op::N, la, Op::N, lb, lc, {1.0 + rep, -1.0}, {0.5 * rep, 0}, rep),
              0)
        << rep;
  const MultiplyPlan::ExecuteSeconds t = plan.last_seconds();  // the last execute's parts, this rank's
  EXPECT_TRUE(t.redistribute_in >= 0 && t.multiply >= 0 && t.redistribute_out >= 0 && t.total() > 0);
}

TEST_P(MultiplyIn, KZeroScalesC) {
  Comm world = Comm::world();
  const int P = world.size(), me = world.rank();
  const Layout la = placed(make_layout(1, 0, 5, 0, P, me)), lb = placed(make_layout(2, 0, 0, 4, P, me)),
               lc = placed(make_layout(3, 1, 5, 4, P, me));
  MultiplyPlan plan(world, Dtype::f64, Op::N, la, Op::N, lb, lc, placed(MultiplyOptions{}));
  EXPECT_EQ(plan.algorithm_name(), "none");
  EXPECT_EQ(check_multiply<double>(plan, Op::N, la, Op::N, lb, lc, 2.0, 3.0), 0);
}

// Mixed memories: each of the six mixes of host and device memory over A, B and C (bit i of
// `mix`: matrix i on the device), the host ones staged through the device space. f64 and c64,
// every layout kind for each matrix, odd shapes, every op for the complex type.
TEST_P(MultiplyIn, MixedMemories) {
  if (where == Where::host) GTEST_SKIP() << "mixed memories need a device (the emulated one or a GPU)";
  struct Shape {
    index_t m, n, k;
  };
  const Shape shapes[] = {{7, 5, 3}, {1, 6, 11}, {13, 1, 2}, {5, 9, 1}};
  const int cases = Comm::world().size() <= 4 ? 4 : 2;  // fewer plans where each costs more
  for (int mix = 1; mix < 7; ++mix)
    for (int c = 0; c < cases; ++c) {
      const Shape s = shapes[(mix + c) % 4];
      const int ka = (mix + c) % 4, kb = (mix + 2 * c + 1) % 4, kc = (3 * mix + c + 2) % 4, v = mix + c;
      EXPECT_EQ(multiply_case<double>(s.m, s.n, s.k, op_of(c % 2), op_of((c / 2) % 2), ka, kb, kc, v, 2.0, -1.0, {},
                                      false, mix),
                0)
          << "mix " << mix << " case " << c;
      EXPECT_EQ(multiply_case<std::complex<double>>(s.n, s.m, s.k, op_of((mix + c) % 3), op_of(c % 3), kc, ka, kb, v + 1,
                                                    {1.0, -2.0}, {0.5, 1.0}, {}, false, mix),
                0)
          << "complex, mix " << mix << " case " << c;
    }
}

// Mixed memories with beta = 0 (C in host memory and NaN: not read, so not copied in), a plan
// executed several times (the device copies reused), k = 0 (C = beta C through C's copy), and
// the plan's report: staged matrices, their copies in memory_bytes().
TEST_P(MultiplyIn, MixedMemoriesBetaZeroReusedKZero) {
  if (where == Where::host) GTEST_SKIP() << "mixed memories need a device (the emulated one or a GPU)";
  Comm world = Comm::world();
  const int P = world.size(), me = world.rank();
  for (int mix : {1, 2, 3}) {
    EXPECT_EQ(multiply_case<double>(6, 5, 4, Op::N, Op::T, mix % 4, (mix + 1) % 4, mix, mix, 3.0, 0.0, {}, true, mix), 0)
        << mix;
    EXPECT_EQ(multiply_case<std::complex<float>>(3, 7, 2, Op::C, Op::N, 3 - mix, mix, 0, mix, {0, 1}, 0.0, {}, true, mix),
              0)
        << mix;
  }
  for (int mix : {4, 1, 6}) {
    const int m = 7, k = 3, n = 11;
    const Layout la = placed(make_layout(0, 2, m, k, P, me), mix & 1), lb = placed(make_layout(3, 0, k, n, P, me), mix & 2),
                 lc = placed(make_layout(1, 1, m, n, P, me), mix & 4);
    MultiplyPlan plan(world, Dtype::c64, Op::N, la, Op::N, lb, lc, placed(MultiplyOptions{}));
    for (int rep = 0; rep < 3; ++rep)
      EXPECT_EQ(check_multiply<std::complex<double>>(plan, Op::N, la, Op::N, lb, lc, {1.0 + rep, -1.0}, {0.5 * rep, 0},
                                                     rep, rep == 0, mix),
                0)
          << mix << " " << rep;
    // The copies are counted: at least this rank's staged storage, and no less than the same plan
    // with all three on the device.
    std::size_t staged = 0;
    const Layout* ls[3] = {&la, &lb, &lc};
    for (int i = 0; i < 3; ++i)
      if (!(mix >> i & 1))
        staged += std::size_t(distmm::local_extent(resolve(*ls[i], world, "X").ranks[std::size_t(me)])) * 16;
    const MultiplyPlan all(world, Dtype::c64, Op::N, placed(la), Op::N, placed(lb), placed(lc), placed(MultiplyOptions{}));
    EXPECT_GE(plan.memory_bytes(), staged);
    EXPECT_GE(plan.memory_bytes(), all.memory_bytes());
    EXPECT_NE(plan.transport().find("staged from host memory"), std::string::npos) << plan.transport();
    EXPECT_EQ(all.transport().find("staged"), std::string::npos) << all.transport();
  }
  for (int mix : {1, 2, 5}) {  // k = 0: C = beta C; A and B are not read
    const Layout la = placed(make_layout(1, 0, 5, 0, P, me), mix & 1), lb = placed(make_layout(2, 0, 0, 4, P, me), mix & 2),
                 lc = placed(make_layout(3, 1, 5, 4, P, me), mix & 4);
    MultiplyPlan plan(world, Dtype::f64, Op::N, la, Op::N, lb, lc, placed(MultiplyOptions{}));
    EXPECT_EQ(plan.algorithm_name(), "none");
    EXPECT_EQ(plan.staged_c(), !(mix & 4));
    EXPECT_EQ(check_multiply<double>(plan, Op::N, la, Op::N, lb, lc, 2.0, 3.0, 0, false, mix), 0) << mix;
    EXPECT_EQ(check_multiply<double>(plan, Op::N, la, Op::N, lb, lc, 2.0, 0.0, 1, true, mix), 0) << mix;
  }
}

// The algorithm's own pieces as the callers' blocks; `shift`: rank p holds rank p + shift's.
std::array<Layout, 3> algorithm_layouts(const DistAlgorithm& algo, GemmShape s, int shift) {
  Comm world = Comm::world();
  const int P = world.size(), me = world.rank();
  auto blocks = [&](const Piece& mine, index_t rows, index_t cols) {
    const std::vector<Piece> all = allgather_pieces(mine, world);
    const Piece& p = all[std::size_t((me + shift) % P)];
    std::vector<LayoutBlock> b;
    if (!p.empty())
      b.push_back({p.row_runs[0].global, p.col_runs[0].global, p.rows(), p.cols(), -1, 0, 0, StorageOrder::col_major});
    return placed(Layout::blocks(rows, cols, b));
  };
  return {blocks(algo.piece_a(), s.m, s.k), blocks(algo.piece_b(), s.k, s.n), blocks(algo.piece_c(), s.m, s.n)};
}

// SUMMA's layout of s as the callers' (rank p holding rank p + shift's pieces), SUMMA named.
struct SummaLayouts {
  MultiplyOptions o;
  std::array<Layout, 3> l;
  SummaLayouts(GemmShape s, int shift)
      : l(algorithm_layouts(*make_algorithm(Algorithm::summa, Comm::world(), s, {}), s, shift)) {
    o.algorithm = Algorithm::summa;
  }
  MultiplyPlan plan(Dtype dt) const {
    return MultiplyPlan(Comm::world(), dt, Op::N, l[0], Op::N, l[1], l[2], placed(o));
  }
};

TEST_P(MultiplyIn, MatchingLayoutMovesNothing) {
  Comm world = Comm::world();
  const GemmShape s{9, 10, 7};
  SummaLayouts sl(s, 0);
  const auto& l = sl.l;
  MultiplyPlan plan = sl.plan(Dtype::f64);
  EXPECT_EQ(plan.moved_total().total(), 0);
  EXPECT_TRUE(plan.in_place_a() && plan.in_place_b() && plan.in_place_c());
  for (int r = 0; r < world.size(); ++r) EXPECT_EQ(plan.ranks()[std::size_t(r)], r);
  EXPECT_EQ(plan.held_elements(), s.m * s.k + s.k * s.n + s.m * s.n);
  EXPECT_EQ(check_multiply<double>(plan, Op::N, l[0], Op::N, l[1], l[2], 1.0, 2.0), 0);
  EXPECT_EQ(check_multiply<double>(plan, Op::N, l[0], Op::N, l[1], l[2], -1.0, 0.0, 1, true), 0);
  // Without the relabeling the same layouts still match.
  sl.o.relabel = false;
  EXPECT_EQ(sl.plan(Dtype::f64).moved_total().total(), 0);
}

TEST_P(MultiplyIn, RotatedPiecesAreRelabeledNotMoved) {
  Comm world = Comm::world();
  const int P = world.size();
  const GemmShape s{11, 8, 9};
  SummaLayouts sl(s, 1);
  const auto& l = sl.l;
  MultiplyPlan plan = sl.plan(Dtype::f32);
  const index_t all = s.m * s.k + s.k * s.n + s.m * s.n;
  EXPECT_EQ(plan.moved_total().total(), 0);
  EXPECT_EQ(plan.held_elements(), all);
  if (P > 1) {
    EXPECT_LT(plan.held_elements_identity(), all);
  }
  // This rank plays the algorithm's rank after its own; ranks whose pieces are all empty (more
  // ranks than rows, e.g. 13) hold nothing and may be assigned in any order.
  const int me = world.rank();
  const auto& ranks = plan.ranks();
  const int q = int(std::find(ranks.begin(), ranks.end(), me) - ranks.begin());
  const DistAlgorithm& a = plan.algorithm();
  if (!a.piece_a().empty() || !a.piece_b().empty() || !a.piece_c().empty()) EXPECT_EQ(q, (me + 1) % P);
  EXPECT_EQ(check_multiply<float>(plan, Op::N, l[0], Op::N, l[1], l[2], 1.0, 1.0), 0);
  // Without it, everything not on its rank moves.
  sl.o.relabel = false;
  MultiplyPlan fixed = sl.plan(Dtype::f32);
  EXPECT_EQ(fixed.moved_total().total() + plan.held_elements_identity(), all);
  EXPECT_EQ(check_multiply<float>(fixed, Op::N, l[0], Op::N, l[1], l[2], 1.0, 1.0), 0);
}

TEST(Multiply, BadLayoutsThrowOnEveryRank) {
  Comm world = Comm::world();
  const int P = world.size(), me = world.rank();
  const Layout a = Layout::row_slabs(6, 4, Layout::even_sizes(6, P)), b = Layout::col_slabs(4, 5, Layout::even_sizes(5, P)),
               c = Layout::row_slabs(6, 5, Layout::even_sizes(6, P));
  auto message = [&](Op oa, const Layout& la, const Layout& lb, const Layout& lc) -> std::string {
    try {
      MultiplyPlan p(world, Dtype::f64, oa, la, Op::N, lb, lc);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(message(Op::N, a, b, c), "");
  EXPECT_NE(message(Op::T, a, b, c).find("op(A) must have C's 6 rows"), std::string::npos);
  EXPECT_NE(message(Op::N, a, Layout::col_slabs(3, 5, Layout::even_sizes(5, P)), c).find("k x n = 4 x 5"),
            std::string::npos);
  const Layout bad_ld = Layout::block_cyclic(6, 5, 2, 2, 1, P, 0, 0, me == P - 1 ? 2 : 6);
  EXPECT_NE(message(Op::N, a, b, bad_ld).find("C: leading dimension 2 on rank"), std::string::npos);
  if (P > 1)  // at one rank, A alone in device memory is a mixed plan
    EXPECT_NE(message(Op::N, a.with_memory(me == P - 1 ? Memory::device : Memory::host), b, c)
                  .find("A is in GPU memory on some ranks"),
              std::string::npos);
  MultiplyPlan plan(world, Dtype::f64, Op::N, a, Op::N, b, c);
  float x = 0;
  EXPECT_THROW(plan.execute<float>(1.0f, &x, &x, 0.0f, &x), std::invalid_argument);
}

// The INT8-emulated engines' accuracy target per plan (MultiplyOptions::engine_options.accuracy):
// a bad one is a UsageError naming the fix, on every rank; a good one is taken by any engine.
TEST(Multiply, AccuracyTargetPerPlan) {
  Comm world = Comm::world();
  const int P = world.size();
  const Layout a = Layout::row_slabs(6, 4, Layout::even_sizes(6, P)), b = Layout::col_slabs(4, 5, Layout::even_sizes(5, P)),
               c = Layout::row_slabs(6, 5, Layout::even_sizes(6, P));
  auto message = [&](const std::string& accuracy) -> std::string {
    MultiplyOptions o;
    o.engine_options.accuracy = accuracy;
    try {
      MultiplyPlan p(world, Dtype::f64, Op::N, a, Op::N, b, c, o);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "";
  };
  for (const char* good : {"native", "max", "1e-10"}) EXPECT_EQ(message(good), "") << good;
  EXPECT_NE(message("fast").find("engine_options.accuracy fast: use native, max or a relative error"),
            std::string::npos)
      << message("fast");
  EXPECT_NE(message("0").find("use native, max"), std::string::npos);
}

// The plan's error factor counts the Strassen-like levels its engine ran (Winograd's one level:
// 18 on the classical bound; Higham, Sec. 23.2.2), on the ranks whose products recursed: 1
// before the first execute, then 18 (the most over the ranks), with an exact result.
TEST(Multiply, ErrorGrowthCountsTheEnginesLevels) {
  Comm world = Comm::world();
  const int P = world.size();
  const index_t m = 96, n = 80, k = 112;
  const Layout a = Layout::row_slabs(m, k, Layout::even_sizes(m, P)), b = Layout::col_slabs(k, n, Layout::even_sizes(n, P)),
               c = Layout::row_slabs(m, n, Layout::even_sizes(m, P));
  MultiplyOptions o;
  o.algorithm = Algorithm::summa;
  o.engine = "winograd";
  o.engine_options.levels = 1, o.engine_options.cutoff = 2;
  MultiplyPlan plan(world, Dtype::f64, Op::N, a, Op::N, b, c, o);
  EXPECT_EQ(world.allreduce_max_uncounted(plan.error_growth()), 1.0);
  EXPECT_EQ(check_multiply<double>(plan, Op::N, a, Op::N, b, c, 1.0, 0.0), 0);
  EXPECT_EQ(world.allreduce_max_uncounted(plan.error_growth()), 18.0);
}

// Device memory described differently on different ranks, or without a way to compute on it, is
// refused on every rank with one message (MemoryUnsupported, the C API's DISTMM_ERR_UNSUPPORTED);
// host and device memory mixed is taken.
TEST(Multiply, MemoriesRefusedOnEveryRank) {
  Comm world = Comm::world();
  const int P = world.size();
  const Layout a = Layout::row_slabs(6, 4, Layout::even_sizes(6, P)), b = Layout::col_slabs(4, 5, Layout::even_sizes(5, P)),
               c = Layout::row_slabs(6, 5, Layout::even_sizes(6, P));
  const Layout ad = a.with_memory(Memory::device), bd = b.with_memory(Memory::device), cd = c.with_memory(Memory::device);
  auto message = [&](const Layout& la, const Layout& lb, const Layout& lc, MultiplyOptions o = {}) -> std::string {
    try {
      MultiplyPlan p(world, Dtype::f64, Op::N, la, Op::N, lb, lc, o);
    } catch (const MemoryUnsupported& e) {
      return e.what();
    }
    return "";
  };
  if (P > 1) {
    const std::string some = message(ad, world.rank() == 0 ? b : bd, c);
    EXPECT_NE(some.find("B is in GPU memory on some ranks"), std::string::npos) << some;
  }
  MultiplyOptions blas;
  blas.engine = "blas";
  const std::string no_gpu = message(ad, bd, cd, blas);
  EXPECT_NE(no_gpu.find(gpu_support_built() ? "A, B and C are in GPU memory but engine blas computes on the host"
                                            : "A, B and C are in GPU memory but this build of distmm has no CUDA"),
            std::string::npos)
      << no_gpu;
  const std::string mixed = message(a, bd, c, blas);
  EXPECT_NE(mixed.find(gpu_support_built() ? "B is in GPU memory but engine blas" : "B is in GPU memory but this build"),
            std::string::npos)
      << mixed;
  blas.emulate_device = true;
  EXPECT_EQ(message(ad, bd, cd, blas), "");
  EXPECT_EQ(message(ad, bd, c, blas), "");  // mixed: C staged
  EXPECT_EQ(message(a, bd, c, blas), "");
}

// A rank that cannot allocate the plan's buffers (the emulated device's memory, enforced and tiny
// on the last rank) fails the plan on every rank with one message: the plan allocates what
// execute() needs, so no rank fails alone in execute() while the others wait in a collective.
TEST(Multiply, OutOfDeviceMemoryOnOneRankFailsEveryRank) {
  Comm world = Comm::world();
  const int P = world.size(), me = world.rank();
  const index_t m = 2 * P + 3, n = 5, k = 4;  // every rank holds at least 2 rows of A
  const Layout la = Layout::row_slabs(m, k, Layout::even_sizes(m, P)), lb = make_layout(0, 1, k, n, P, me),
               lc = make_layout(3, 0, m, n, P, me);
  for (int mix : {7, 6, 3}) {  // all on the device; A in host memory (its copy); C in host memory
    auto at = [&](const Layout& l, int i) { return mix >> i & 1 ? l.with_memory(Memory::device) : l; };
    MultiplyOptions o;
    o.emulate_device = true;
    if (me == P - 1) o.emulated_device_bytes = 16;
    std::string msg;
    try {
      MultiplyPlan plan(world, Dtype::f64, Op::N, at(la, 0), Op::N, at(lb, 1), at(lc, 2), o);
    } catch (const UsageError& e) {
      msg = e.what();
    }
    EXPECT_EQ(msg, world.first_error(msg)) << "mix " << mix << ": the ranks left with different errors";
    if (mix == 6)  // A's copy (2 rows x 4 columns at least) does not fit on the last rank
      EXPECT_NE(msg.find("rank " + std::to_string(P - 1) + " cannot allocate the plan's buffers"), std::string::npos)
          << msg;
    if (!msg.empty()) EXPECT_NE(msg.find("the emulated device cannot allocate"), std::string::npos) << msg;
    // The same plan with the memory it needs (enforced too) runs, on the same communicator.
    o.emulated_device_bytes = std::size_t(1) << 30;
    MultiplyPlan plan(world, Dtype::f64, Op::N, at(la, 0), Op::N, at(lb, 1), at(lc, 2), o);
    EXPECT_EQ(check_multiply<double>(plan, Op::N, at(la, 0), Op::N, at(lb, 1), at(lc, 2), 1.0, 1.0), 0) << mix;
    EXPECT_EQ(check_multiply<double>(plan, Op::N, at(la, 0), Op::N, at(lb, 1), at(lc, 2), -2.0, 0.0, 1, true), 0) << mix;
  }
}

// ---- block-cyclic A, B and C on one grid: the drop-in's schedules on the layout itself ----

struct BcResult {
  std::string algo;
  index_t moved = 0;     // summed over the ranks
  bool in_place = false;  // A, B and C on this rank
  int bad = 0;
  MultiplyPlan::ExecuteSeconds seconds;
  CommEstimate words;
  std::size_t memory = 0;
  bool direct() const { return algo.rfind("block-cyclic", 0) == 0; }
};

// A (op(A) m x k), B (op(B) k x n) and C block-cyclic on a pr x pc grid of blocks ba, bb, bc
// (square), all from process (v % pr, v % pc); v odd: padded lld, the grid in column-major rank
// order. nan_c: C starts as NaN (beta must be 0).
template <class T>
BcResult bc_case(index_t m, index_t n, index_t k, int pr, int pc, index_t ba, index_t bb, index_t bc,
                 std::complex<double> alpha, std::complex<double> beta, bool nan_c = false, int v = 0, Op oa = Op::N,
                 Op ob = Op::N, const MultiplyOptions& o = {}) {
  Comm world = Comm::world();
  const GridOrder order = v % 2 ? GridOrder::col_major : GridOrder::row_major;
  auto lay = [&](index_t r, index_t c, index_t b) {
    return Layout::block_cyclic(r, c, b, b, pr, pc, v % pr, v % pc, v % 2 ? r + 2 : 0, order);
  };
  const Layout la = oa == Op::N ? lay(m, k, ba) : lay(k, m, ba), lb = ob == Op::N ? lay(k, n, bb) : lay(n, k, bb),
               lc = lay(m, n, bc);
  MultiplyPlan plan(world, dtype_of<T>(), oa, la, ob, lb, lc, o);
  BcResult r;
  r.algo = plan.algorithm_name();
  r.moved = plan.moved_total().total();
  r.in_place = plan.in_place_a() && plan.in_place_b() && plan.in_place_c();
  r.words = plan.words();
  r.memory = plan.memory_bytes();
  r.bad = check_multiply<T>(plan, oa, la, ob, lb, lc, alpha, beta, v, nan_c);
  r.seconds = plan.last_seconds();
  return r;
}

// Every pr x pc grid of the ranks.
std::vector<std::pair<int, int>> grids_of(int P) {
  std::vector<std::pair<int, int>> g;
  for (int pr = 1; pr <= P; ++pr)
    if (P % pr == 0) g.emplace_back(pr, P / pr);
  return g;
}

TEST(Multiply, BlockCyclicInPlace) {
  const int P = Comm::world().size();
  struct Shape {
    index_t m, n, k;
  };
  // Primes, ones, skinny, k-heavy (the k-split where the grid lets it), square (SUMMA).
  const Shape shapes[] = {{13, 11, 7}, {1, 1, 1}, {1, 5, 1}, {29, 1, 3}, {7, 3, 1009}, {131, 131, 131}};
  const index_t blocks[] = {1, 3, 8, 2000};  // 2000: a block larger than the matrix
  int c = 0, direct = 0;
  for (auto [pr, pc] : grids_of(P))
    for (index_t b : blocks)
      for (const Shape& s : shapes) {
        const bool nan = c % 2 == 1;
        const std::complex<double> beta = nan ? 0.0 : -2.0;
        const BcResult r = c % 3 == 2 ? bc_case<std::complex<double>>(s.m, s.n, s.k, pr, pc, b, b, b, {1.0, -1.0},
                                                                        nan ? 0.0 : std::complex<double>(0.5, 2.0), nan, c)
                                      : bc_case<double>(s.m, s.n, s.k, pr, pc, b, b, b, 3.0, beta, nan, c);
        ++c;
        const std::string what = std::to_string(pr) + "x" + std::to_string(pc) + " blocks " + std::to_string(b) + " " +
                                 std::to_string(s.m) + " x " + std::to_string(s.n) + " x " + std::to_string(s.k) +
                                 " " + r.algo;
        EXPECT_EQ(r.bad, 0) << what;
        if (!r.direct()) continue;
        ++direct;
        EXPECT_EQ(r.moved, 0) << what;
        EXPECT_TRUE(r.in_place) << what;
        EXPECT_EQ(r.seconds.redistribute_in, 0.0) << what;
        EXPECT_EQ(r.seconds.redistribute_out, 0.0) << what;
        EXPECT_GT(r.words.flops_max, 0.0) << what;
      }
  EXPECT_GT(direct, 0);
  // Where the conditions hold for certain: one blocking, a square (or 1 x P) grid, panels wide.
  if (P == 1 || P == 4) {
    const int pr = P == 1 ? 1 : 2;
    const BcResult r = bc_case<double>(131, 131, 131, pr, pr, 8, 8, 8, 1.0, 1.0);
    EXPECT_EQ(r.algo, "block-cyclic summa");
    EXPECT_EQ(r.bad, 0);
    EXPECT_EQ(r.moved, 0);
    EXPECT_GT(r.memory, 0u);
  }
  // k-heavy: the k-split moves far fewer words than SUMMA. Non-square grids fragment k's runs
  // (A's and B's blockings of k meet on other processes), so on 3 ranks only one block holding
  // all of k gives a k-split (one rank's); from a 3 x 3 grid on, a real one (9 ranks, by hand).
  if (P == 9) {
    const BcResult r = bc_case<std::complex<double>>(30, 30, 2000, 3, 3, 3, 3, 3, {2.0, 1.0}, 0.0, true);
    EXPECT_EQ(r.algo, "block-cyclic k-split");
    EXPECT_EQ(r.bad, 0);
    EXPECT_EQ(r.moved, 0);
    const BcResult q = bc_case<double>(30, 30, 2000, 3, 3, 3, 3, 3, 1.0, -1.0, false, 1);
    EXPECT_EQ(q.algo, "block-cyclic k-split");
    EXPECT_EQ(q.bad, 0);
  }
  if (P == 3) {
    const BcResult r = bc_case<std::complex<double>>(7, 3, 1009, 1, 3, 2000, 2000, 2000, {2.0, 1.0}, 0.0, true);
    EXPECT_EQ(r.algo, "block-cyclic k-split");
    EXPECT_EQ(r.bad, 0);
    EXPECT_EQ(r.moved, 0);
  }
  if (P == 4 || P == 6) {  // everything on one process: one panel
    const BcResult r = bc_case<double>(37, 29, 41, P == 4 ? 4 : 3, P == 4 ? 1 : 2, 2000, 2000, 2000, 1.0, 2.0);
    EXPECT_TRUE(r.direct()) << r.algo;
    EXPECT_EQ(r.bad, 0);
    EXPECT_EQ(r.moved, 0);
  }
}

TEST(Multiply, BlockCyclicFallsBack) {
  const int P = Comm::world().size();
  const auto [pr, pc] = grids_of(P)[grids_of(P).size() / 2];
  // The same layouts that run in place (1 x 1 or a square grid)...
  const BcResult in_place = bc_case<double>(131, 131, 131, pr, pc, 2000, 2000, 2000, 1.0, 1.0);
  EXPECT_TRUE(in_place.direct()) << in_place.algo;
  // ... transposed, conjugated, with the path turned off or an algorithm named: today's plan.
  for (int i = 0; i < 4; ++i) {
    MultiplyOptions o;
    if (i == 2) o.direct = false;
    if (i == 3) o.algorithm = Algorithm::summa;
    const BcResult r = i == 1 ? bc_case<std::complex<double>>(9, 7, 5, pr, pc, 3, 3, 3, {1.0, 1.0}, 2.0, false, 0,
                                                              Op::C, Op::N, o)
                              : bc_case<double>(9, 7, 5, pr, pc, 3, 3, 3, 2.0, 0.0, true, 0, i == 0 ? Op::N : Op::N,
                                                i == 0 ? Op::T : Op::N, o);
    EXPECT_FALSE(r.direct()) << i << " " << r.algo;
    EXPECT_EQ(r.bad, 0) << i;
    if (i == 3) EXPECT_EQ(r.algo, "summa");
  }
  if (P > 1) {  // C's blocking does not line up with A's and B's: redistributed
    const BcResult r = bc_case<double>(9, 7, 5, pr, pc, 3, 3, 2, 1.0, -1.0);
    EXPECT_FALSE(r.direct()) << r.algo;
    EXPECT_EQ(r.bad, 0);
  }
  if (P > 2) {  // a grid of fewer ranks than the communicator's
    Comm world = Comm::world();
    const Layout la = Layout::block_cyclic(9, 5, 2, 2, P - 1, 1), lb = Layout::block_cyclic(5, 7, 2, 2, P - 1, 1),
                 lc = Layout::block_cyclic(9, 7, 2, 2, P - 1, 1);
    MultiplyPlan plan(world, Dtype::f64, Op::N, la, Op::N, lb, lc);
    EXPECT_NE(plan.algorithm_name().rfind("block-cyclic", 0), 0u) << plan.algorithm_name();
    EXPECT_EQ(check_multiply<double>(plan, Op::N, la, Op::N, lb, lc, 1.0, 0.0, 0, true), 0);
  }
}

// The device path moves what the host path moves, and the algorithm counts the same words.
TEST(Multiply, DeviceMovesAsTheHost) {
  Comm world = Comm::world();
  const int P = world.size(), me = world.rank();
  for (int kind = 0; kind < 4; ++kind) {
    const Layout la = make_layout(kind, 1, 9, 6, P, me), lb = make_layout((kind + 1) % 4, 2, 6, 7, P, me),
                 lc = make_layout((kind + 3) % 4, 0, 9, 7, P, me);
    MultiplyOptions o;
    o.algorithm = Algorithm::summa;  // one algorithm: auto may weigh the device's memory differently
    const MultiplyPlan host(world, Dtype::c32, Op::N, la, Op::N, lb, lc, o);
    o.emulate_device = true;
    const MultiplyPlan dev(world, Dtype::c32, Op::N, la.with_memory(Memory::device), Op::N, lb.with_memory(Memory::device),
                           lc.with_memory(Memory::device), o);
    EXPECT_EQ(dev.memory(), Memory::device);
    EXPECT_EQ(host.moved_total().total(), dev.moved_total().total()) << kind;
    EXPECT_EQ(host.moved().total(), dev.moved().total()) << kind;
    EXPECT_EQ(host.words().words_max, dev.words().words_max) << kind;
    EXPECT_EQ(host.in_place_a(), dev.in_place_a());
    EXPECT_EQ(host.in_place_c(), dev.in_place_c());
  }
}

}  // namespace
}  // namespace distmm
