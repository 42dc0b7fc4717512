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
// runs them at 1, 2 and 4 ranks on a GPU machine).
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

Layout placed(const Layout& l) { return where == Where::host ? l : l.with_memory(Memory::device); }
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

// A rank's storage of one matrix where the test runs: the vector itself, or a GPU copy of it.
template <class T>
struct Stored {
  std::vector<T>& host;
  DeviceBlock dev;
  explicit Stored(std::vector<T>& h) : host(h) {
    if (where != Where::gpu) return;
    dev = gpu_space().alloc_elems<T>(index_t(h.size()));
    gpu_space().upload(dev.as<T>(), index_t(h.size()), h.data(), index_t(h.size()), index_t(h.size()), 1, sizeof(T));
  }
  T* ptr() { return where == Where::gpu ? dev.as<T>() : host.data(); }
  void back() {
    if (where == Where::gpu)
      gpu_space().download(host.data(), index_t(host.size()), dev.as<T>(), index_t(host.size()), index_t(host.size()), 1,
                           sizeof(T));
  }
};

// Fills A, B and C in their layouts, executes the plan, and counts the elements of C (over all
// ranks) that differ from alpha op(A) op(B) + beta C. nan_c: C starts as NaN (beta must be 0).
template <class T>
int check_multiply(MultiplyPlan& plan, Op oa, const Layout& la, Op ob, const Layout& lb, const Layout& lc,
                   std::complex<double> alpha, std::complex<double> beta, int seed = 0, bool nan_c = false) {
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
    Stored<T> a(A), b(B), c(C);
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

// One multiply with A, B, C of kinds ka, kb, kc (variants from v) on m x n x k.
template <class T>
int multiply_case(index_t m, index_t n, index_t k, Op oa, Op ob, int ka, int kb, int kc, int v,
                  std::complex<double> alpha, std::complex<double> beta, const MultiplyOptions& o = {},
                  bool nan_c = false) {
  Comm world = Comm::world();
  const int P = world.size(), me = world.rank();
  const Layout la = placed(oa == Op::N ? make_layout(ka, v, m, k, P, me) : make_layout(ka, v, k, m, P, me));
  const Layout lb = placed(ob == Op::N ? make_layout(kb, v + 1, k, n, P, me) : make_layout(kb, v + 1, n, k, P, me));
  const Layout lc = placed(make_layout(kc, v + 2, m, n, P, me));
  MultiplyPlan plan(world, dtype_of<T>(), oa, la, ob, lb, lc, placed(o));
  EXPECT_EQ(plan.memory(), where == Where::host ? Memory::host : Memory::device);
  return check_multiply<T>(plan, oa, la, ob, lb, lc, alpha, beta, v, nan_c);
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
  EXPECT_NE(message(Op::N, a.with_memory(me == P - 1 ? Memory::device : Memory::host), b, c)
                .find(P == 1 ? "A in GPU memory but B, C in host memory" : "A is in GPU memory on some ranks"),
            std::string::npos);
  MultiplyPlan plan(world, Dtype::f64, Op::N, a, Op::N, b, c);
  float x = 0;
  EXPECT_THROW(plan.execute<float>(1.0f, &x, &x, 0.0f, &x), std::invalid_argument);
}

// Device memory mixed with host memory, or without a way to compute on it, is refused on every
// rank with one message (MemoryUnsupported, the C API's DISTMM_ERR_UNSUPPORTED).
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
  EXPECT_NE(message(ad, bd, c).find("A, B in GPU memory but C in host memory"), std::string::npos)
      << message(ad, bd, c);
  MultiplyOptions blas;
  blas.engine = "blas";
  const std::string no_gpu = message(ad, bd, cd, blas);
  EXPECT_NE(no_gpu.find(gpu_support_built() ? "engine blas computes on the host" : "has no CUDA"), std::string::npos)
      << no_gpu;
  blas.emulate_device = true;
  EXPECT_EQ(message(ad, bd, cd, blas), "");
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
