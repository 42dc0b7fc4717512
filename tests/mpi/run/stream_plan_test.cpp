// The panel plan of a streamed host-resident run (mpi/stream_plan.hpp), checked on the host:
// every stage multiplied by its own algorithm on its blocks of the stacked host blocks gives
// the whole product exactly (integer inputs, gathered and compared with BLAS by verify_full),
// the stacked blocks hold each element of A, B and C exactly once over the ranks, and a plan whose
// stages' layouts disagree falls back to one stage with a reason. Every algorithm with a device
// path that fits the rank count, odd shapes, panels of m, of n and of both.
#include <gtest/gtest.h>

#include "mpi/run/stream_plan.hpp"
#include "mpi/run/verify.hpp"
#include "mpi_test_util.hpp"

using namespace distmm;
using namespace distmm::testing;

namespace {

// Whether the ranks' stacked pieces hold every element of a rows x cols matrix exactly once.
bool covers_once(const Piece& p, index_t rows, index_t cols, const Comm& world) {
  std::vector<int> count(std::size_t(rows * cols), 0);
  bool inside = true;
  for (index_t i : Piece::globals(p.row_runs))
    for (index_t j : Piece::globals(p.col_runs)) {
      if (i < 0 || i >= rows || j < 0 || j >= cols) inside = false;
      else ++count[std::size_t(i + j * rows)];
    }
  MPI_Allreduce(MPI_IN_PLACE, count.data(), int(count.size()), MPI_INT, MPI_SUM, world.get());
  for (int c : count) inside = inside && c == 1;
  return !world.any(!inside);
}

// True when the plan streamed (more than one stage).
template <class T>
bool check_plan(const std::string& algo, index_t m, index_t n, index_t k, StageGrid g, AlgoOptions ao = {}) {
  const Comm world = Comm::world();
  const std::string what = algo + " " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
                           " in " + std::to_string(g.rows) + "x" + std::to_string(g.cols) +
                           " panels, P=" + std::to_string(world.size());
  try {
    make_algorithm(algorithm_named(algo), world, {m, n, k}, ao);
  } catch (const UsageError&) {
    return false;  // the rank count does not fit this algorithm
  }
  const StreamPlan plan = make_stream_plan(algorithm_named(algo), world, {m, n, k}, ao, g);
  if (std::min<index_t>(g.rows, m) * std::min<index_t>(g.cols, n) == 1) {  // nothing to stream
    EXPECT_EQ(plan.stages(), 1) << what;
    EXPECT_TRUE(plan.why_one.empty()) << what;
    return false;
  }
  if (plan.stages() == 1) {
    EXPECT_FALSE(plan.why_one.empty()) << what << ": one stage without a reason";
    return false;
  }
  EXPECT_EQ(plan.rows, std::min<index_t>(g.rows, m)) << what;
  EXPECT_EQ(plan.cols, std::min<index_t>(g.cols, n)) << what;
  // Each element on exactly one rank (an overlap would leave another element out, and the
  // product check alone could not see it: the gathered A and C would both hold zeros there).
  EXPECT_TRUE(covers_once(plan.a, m, k, world)) << what << ": A";
  EXPECT_TRUE(covers_once(plan.b, k, n, world)) << what << ": B";
  EXPECT_TRUE(covers_once(plan.c, m, n, world)) << what << ": C";

  DistMatrix<T> A(m, k, plan.a), B(k, n, plan.b), C(m, n, plan.c), C0(m, n, plan.c);
  const std::uint64_t seed = 99 + m + 7 * n + 31 * k;
  fill_random(A, seed, Stream::A, Fill::integer);
  fill_random(B, seed, Stream::B, Fill::integer);
  fill_random(C0, seed, Stream::C, Fill::integer);
  std::copy(C0.local.data(), C0.local.data() + C0.local.size(), C.local.data());
  auto engine = make_engine("blas", {});
  const T alpha = as_scalar<T>({2, -1}), beta = as_scalar<T>({-1, 1});
  for (int s = 0; s < plan.stages(); ++s) {
    // The stage's blocks of the stacked blocks, copied out contiguous (as the streamed run
    // uploads them into GPU buffers of leading dimension = rows), multiplied, C copied back.
    DistAlgorithm& al = plan.algo(s);
    const Piece &pa = al.piece_a(), &pb = al.piece_b(), &pc = al.piece_c();
    const index_t a0 = plan.a_row0[std::size_t(s / plan.cols)], b0 = plan.b_col0[std::size_t(s % plan.cols)];
    const index_t c0 = plan.c_row0[std::size_t(s / plan.cols)], c1 = plan.c_col0[std::size_t(s % plan.cols)];
    Matrix<T> a(pa.rows(), pa.cols()), b(pb.rows(), pb.cols()), c(pc.rows(), pc.cols());
    for (index_t j = 0; j < pa.cols(); ++j)
      for (index_t i = 0; i < pa.rows(); ++i) a(i, j) = A.local(a0 + i, j);
    for (index_t j = 0; j < pb.cols(); ++j)
      for (index_t i = 0; i < pb.rows(); ++i) b(i, j) = B.local(i, b0 + j);
    for (index_t j = 0; j < pc.cols(); ++j)
      for (index_t i = 0; i < pc.rows(); ++i) c(i, j) = C.local(c0 + i, c1 + j);
    al.multiply<T>(*engine, alpha, a, b, beta, c);
    for (index_t j = 0; j < pc.cols(); ++j)
      for (index_t i = 0; i < pc.rows(); ++i) C.local(c0 + i, c1 + j) = c(i, j);
  }
  const VerifyResult v = verify_full(A, B, C, alpha, beta, &C0, verify_tolerance(dtype_of<T>(), k, 1.0), world);
  EXPECT_TRUE(v.passed) << what;
  EXPECT_EQ(v.max_abs, 0.0) << what;
  return true;
}

const char* const kAlgos[] = {"summa", "cuboid", "cannon", "dns", "caps"};

}  // namespace

TEST(StreamPlan, PanelsMultiplyToTheWholeProductOnEveryAlgorithm) {
  for (const char* algo : kAlgos) {
    int streamed = 0;
    for (StageGrid g : {StageGrid{2, 1}, {3, 1}, {5, 1}, {1, 2}, {2, 2}, {3, 2}})
      for (auto [m, n, k] : {std::array<index_t, 3>{37, 11, 13}, {97, 5, 31}, {130, 67, 259}, {2, 3, 4}, {5, 1, 7}}) {
        streamed += check_plan<double>(algo, m, n, k, g);
        if (g.rows == 2) check_plan<std::complex<float>>(algo, m, n, k, g);
      }
    // SUMMA and cuboid fit every rank count, and their stages' layouts agree on these shapes
    if (std::string(algo) == "summa" || std::string(algo) == "cuboid") EXPECT_GT(streamed, 10) << algo;
  }
}

TEST(StreamPlan, DealtCapsAndFixedGrids) {
  const int P = Comm::world().size();
  AlgoOptions dealt;
  dealt.caps_steps = parse_caps_steps("X");
  if (P >= 2) check_plan<double>("caps", 160, 140, 150, {2, 2}, dealt);
  AlgoOptions grid;
  grid.grid_rows = P;  // SUMMA on P x 1: every panel's rows split over all ranks
  EXPECT_TRUE(check_plan<double>("summa", 61, 29, 43, {3, 1}, grid));
  EXPECT_TRUE(check_plan<double>("summa", 61, 29, 43, {2, 3}, grid));
}

TEST(StreamPlan, OneStageAskedIsNoPlan) {
  const StreamPlan p = make_stream_plan(Algorithm::summa, Comm::world(), {64, 64, 64}, {}, {1, 1});
  EXPECT_EQ(p.stages(), 1);
  EXPECT_TRUE(p.algos.empty());
  EXPECT_TRUE(p.why_one.empty());
}
