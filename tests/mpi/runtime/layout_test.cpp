// Layouts and the general redistribution (mpi/runtime/layout.hpp, redistribute.hpp): round trips
// between every pair of layout kinds (block-cyclic with several blockings and sources, uneven
// and empty slabs, block lists, row-major storage), transposes and conjugates while packing,
// beta on the way in, the checks of bad layouts, and the relabeling of ranks.
#include <gtest/gtest.h>

#include <complex>

#include "mpi/runtime/layout.hpp"
#include "mpi/runtime/redistribute.hpp"
#include "runtime/layout_test_util.hpp"

namespace distmm {
namespace {

using testing::make_layout;
using testing::value;

struct Shape {
  index_t rows, cols;
};
const Shape kShapes[] = {{1, 1}, {7, 5}, {13, 2}, {3, 17}};

// src (kind a, variant va) -> dst (kind b, vb): every element of dst is the global value, its
// padding untouched; and back again.
template <class T>
void round_trip(int a, int va, int b, int vb, Shape s) {
  Comm world = Comm::world();
  const int P = world.size(), me = world.rank();
  const ResolvedLayout src = resolve(make_layout(a, va, s.rows, s.cols, P, me), world, "X");
  const ResolvedLayout dst = resolve(make_layout(b, vb, s.rows, s.cols, P, me), world, "Y");
  ASSERT_EQ(src.error, "");
  ASSERT_EQ(dst.error, "");
  const T pad(-99);
  auto g = [](index_t i, index_t j) { return value<T>(1, i, j); };
  std::vector<T> x = testing::local_storage<T>(src, me, g, pad);
  std::vector<T> y = testing::local_storage<T>(dst, me, [&](index_t, index_t) { return T(77); }, pad);
  const Redistribution there(src, dst, world), back(dst, src, world);
  there.execute<T>(x.data(), y.data(), world);
  int bad = 0;
  testing::for_each_held(dst.ranks[std::size_t(me)], [&](index_t i, index_t j, index_t at) {
    bad += y[std::size_t(at)] != g(i, j);
    y[std::size_t(at)] = pad;  // marks the element: the padding check below then covers all
  });
  for (const T& e : y) bad += e != pad;
  testing::for_each_held(dst.ranks[std::size_t(me)], [&](index_t i, index_t j, index_t at) { y[std::size_t(at)] = g(i, j); });
  std::vector<T> z = testing::local_storage<T>(src, me, [](index_t, index_t) { return T(5); }, pad);
  back.execute<T>(y.data(), z.data(), world);
  for (std::size_t t = 0; t < z.size(); ++t) bad += z[t] != x[t];
  // Every element moved once: what is sent and kept adds up to the matrix over the ranks.
  index_t counts[2] = {there.sent() + there.kept(), there.received() - there.sent()};
  MPI_Allreduce(MPI_IN_PLACE, counts, 2, MPI_INT64_T, MPI_SUM, world.get());
  EXPECT_EQ(counts[0], s.rows * s.cols);
  EXPECT_EQ(counts[1], 0);
  EXPECT_EQ(bad, 0) << testing::kind_name(a) << "/" << va << " -> " << testing::kind_name(b) << "/" << vb << " "
                    << s.rows << " x " << s.cols;
}

TEST(Layout, RoundTripsBetweenEveryPairOfKinds) {
  for (const Shape& s : kShapes)
    for (int a = 0; a < 4; ++a)
      for (int b = 0; b < 4; ++b)
        for (int v = 0; v < 2; ++v) round_trip<double>(a, v, b, (v + a + b) % 3, s);
}

TEST(Layout, RoundTripsKeepEveryType) {
  round_trip<float>(0, 2, 3, 1, {9, 4});
  round_trip<std::complex<float>>(1, 1, 0, 1, {5, 8});
  round_trip<std::complex<double>>(3, 0, 2, 1, {6, 6});
}

TEST(Layout, BlockCyclicBlockingsAndSources) {
  Comm world = Comm::world();
  for (int v = 0; v < 6; ++v) round_trip<double>(0, v, 0, 5 - v, {11, 7});
  // A descinit_ descriptor gives the same layout: every rank's tiles hold the same elements.
  const int P = world.size(), desc[9] = {1, 0, 11, 7, 3, 2, 0, P - 1, 11};
  const ResolvedLayout d = resolve(Layout::scalapack(desc, 1, P), world, "A"),
                       b = resolve(Layout::block_cyclic(11, 7, 3, 2, 1, P, 0, P - 1, 11), world, "A");
  ASSERT_EQ(d.error, "");
  for (int r = 0; r < P; ++r) {
    const index_t n = overlap_elements(b.ranks[std::size_t(r)], b.ranks[std::size_t(r)]);
    EXPECT_EQ(overlap_elements(d.ranks[std::size_t(r)], b.ranks[std::size_t(r)]), n);
    EXPECT_EQ(overlap_elements(d.ranks[std::size_t(r)], d.ranks[std::size_t(r)]), n);
  }
  const int dtype2[9] = {2, 0, 11, 7, 3, 2, 0, 0, 11};
  EXPECT_THROW(Layout::scalapack(dtype2, 1, P), std::invalid_argument);
}

// The transpose (and conjugate) of an n x m layout, read while packing, is an m x n matrix in
// another layout; beta adds into what the destination holds.
TEST(Layout, TransposeConjugateAndBetaWhilePacking) {
  using T = std::complex<double>;
  Comm world = Comm::world();
  const int P = world.size(), me = world.rank();
  const index_t m = 6, n = 9;
  for (int a = 0; a < 4; ++a) {
    const int b = (a + 1) % 4;
    const ResolvedLayout st = resolve(make_layout(a, 1, n, m, P, me), world, "X");  // stored n x m
    const ResolvedLayout dst = resolve(make_layout(b, 0, m, n, P, me), world, "Y");
    auto g = [](index_t i, index_t j) { return value<T>(2, i, j); };
    std::vector<T> x = testing::local_storage<T>(st, me, g, T(0));
    auto before = [](index_t i, index_t j) { return value<T>(3, i, j); };
    std::vector<T> y = testing::local_storage<T>(dst, me, before, T(0));
    const T beta(2, -1);
    Redistribution(transposed(st), dst, world).execute<T>(x.data(), y.data(), world, true, &beta);
    int bad = 0;
    testing::for_each_held(dst.ranks[std::size_t(me)], [&](index_t i, index_t j, index_t at) {
      bad += y[std::size_t(at)] != beta * before(i, j) + std::conj(g(j, i));
    });
    EXPECT_EQ(bad, 0) << testing::kind_name(a) << " -> " << testing::kind_name(b);
  }
}

// A layout checked on one rank only (its lld) fails on every rank, with one message.
TEST(Layout, BadLayoutsAreNamed) {
  Comm world = Comm::world();
  const int P = world.size(), me = world.rank();
  auto err = [&](const Layout& l) { return world.first_error(resolve(l, world, "A").error); };
  EXPECT_NE(err(Layout::row_slabs(5, 3, std::vector<index_t>(std::size_t(P), 2))).find("sum to 5"), std::string::npos);
  EXPECT_NE(err(Layout::row_slabs(5, 3, {5})).find(P == 1 ? "" : "one size per rank"), std::string::npos);
  EXPECT_NE(err(Layout::block_cyclic(5, 3, 0, 2, 1, 1)).find("mb, nb >= 1"), std::string::npos);
  EXPECT_NE(err(Layout::block_cyclic(5, 3, 2, 2, P + 1, 1)).find("nprow * npcol <= "), std::string::npos);
  // The last rank's lld is too small.
  EXPECT_NE(err(Layout::block_cyclic(8, 3, 2, 2, 1, P, 0, 0, me == P - 1 ? 3 : 8)).find("use ld >= 8"),
            std::string::npos);
  std::vector<LayoutBlock> overlap = {{0, 0, 3, 3, 0}, {2, 2, 3, 1, P - 1}};
  EXPECT_NE(err(Layout::blocks(5, 3, overlap)).find("overlap"), std::string::npos);
  std::vector<LayoutBlock> gap = {{0, 0, 4, 3, 0}};
  EXPECT_NE(err(Layout::blocks(5, 3, gap)).find("cover 12 of"), std::string::npos);
  // The memory is MultiplyPlan's to check: the geometry is the same in either.
  EXPECT_EQ(err(Layout::row_slabs(5, 3, Layout::even_sizes(5, P)).with_memory(Memory::device)), "");
  EXPECT_EQ(err(Layout::row_slabs(5, 3, Layout::even_sizes(5, P))), "");
}

// The Hungarian method, not a greedy one: taking the largest entry first (3) would leave 0.
TEST(Layout, AssignmentMaximisesTheHeldVolume) {
  EXPECT_EQ(best_assignment({{3, 2}, {2, 0}}), (std::vector<int>{1, 0}));
  EXPECT_EQ(best_assignment({{4, 0, 0}, {0, 4, 0}, {0, 0, 4}}), (std::vector<int>{0, 1, 2}));
  // Ties keep ranks on their own parts.
  EXPECT_EQ(best_assignment({{1, 1}, {1, 1}}), (std::vector<int>{0, 1}));
  EXPECT_EQ(best_assignment({{0, 5, 1}, {1, 0, 5}, {5, 1, 0}}), (std::vector<int>{2, 0, 1}));
}

// Matching layouts keep the identity; slabs dealt one rank over are taken back by relabeling,
// and what it saves is the whole matrix.
TEST(Layout, RelabelingSavesWhatRanksHold) {
  Comm world = Comm::world();
  const int P = world.size(), me = world.rank();
  const index_t m = 3 * P + 2, n = 4;
  const auto sizes = Layout::even_sizes(m, P);
  const ResolvedLayout x = resolve(Layout::row_slabs(m, n, sizes), world, "X");
  auto sum = [&](const std::vector<std::vector<index_t>>& held, const std::vector<int>& perm) {
    index_t s = 0;
    for (int r = 0; r < P; ++r) s += held[std::size_t(perm[std::size_t(r)])][std::size_t(r)];
    return s;
  };
  std::vector<int> identity(static_cast<std::size_t>(P));
  for (int r = 0; r < P; ++r) identity[std::size_t(r)] = r;
  const auto same = held_matrix(x, x, world);
  EXPECT_EQ(best_assignment(same), identity);
  EXPECT_EQ(sum(same, identity), m * n);
  // Part r of y is slab r + 1 of x (mod P), so rank r + 1 holds it.
  std::vector<LayoutBlock> shifted;
  std::vector<index_t> start(static_cast<std::size_t>(P) + 1, 0);
  for (int r = 0; r < P; ++r) start[std::size_t(r) + 1] = start[std::size_t(r)] + sizes[std::size_t(r)];
  for (int r = 0; r < P; ++r) {
    const int slab = (r + 1) % P;
    shifted.push_back({start[std::size_t(slab)], 0, sizes[std::size_t(slab)], n, r, 0, 0, StorageOrder::col_major});
  }
  const ResolvedLayout y = resolve(Layout::blocks(m, n, shifted), world, "Y");
  ASSERT_EQ(y.error, "");
  const auto held = held_matrix(x, y, world);
  const std::vector<int> perm = best_assignment(held);
  for (int r = 0; r < P; ++r) EXPECT_EQ(perm[std::size_t(r)], (r + 1) % P);
  EXPECT_EQ(sum(held, perm), m * n);
  EXPECT_EQ(sum(held, identity), P == 1 ? m * n : 0);  // saved: m * n for P > 1
  (void)me;
}

}  // namespace
}  // namespace distmm
