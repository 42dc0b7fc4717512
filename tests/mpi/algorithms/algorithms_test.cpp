// Every algorithm on every rank count it fits, on odd shapes (primes, 1, skinny, fat), every
// dtype of the list (f32, f64, c32, c64), against BLAS on the gathered operands (integer-valued
// inputs, complex ones with integer real and imaginary parts: exact); and measured words
// against the analytic count.
#include <gtest/gtest.h>

#include "cuda/device_info.hpp"
#include "mpi_test_util.hpp"

using namespace distmm;
using distmm::testing::multiply_and_compare;

namespace {

struct Shape {
  index_t m, n, k;
};
const Shape kShapes[] = {{1, 1, 1},   {1, 1, 13},  {13, 1, 1},  {1, 17, 1},  {7, 11, 13},
                         {17, 19, 23}, {64, 64, 64}, {97, 5, 31}, {5, 3, 101}, {3, 67, 2},
                         {40, 33, 2},  {2, 2, 45}};

class AlgorithmTest : public ::testing::TestWithParam<std::string> {};

using Scalar = std::complex<double>;

template <class T>
void check_all_shapes(const std::string& algo, AlgoOptions opts = {}) {
  int P;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  // Complex types also get a complex alpha and beta.
  const Scalar alpha2 = is_complex_v<T> ? Scalar(-2, 1) : Scalar(-2), beta2 = is_complex_v<T> ? Scalar(3, -1) : Scalar(3);
  for (const Shape& s : kShapes) {
    for (auto [alpha, beta] : {std::pair{Scalar(1), Scalar(0)}, std::pair{alpha2, beta2}}) {
      auto o = multiply_and_compare<T>(algo, "blas", s.m, s.n, s.k, alpha, beta, opts);
      if (o.skipped) GTEST_SKIP() << o.note;
      EXPECT_EQ(o.max_err, 0.0) << algo << " " << DtypeTraits<T>::name << " P=" << P << " " << s.m
                                << "x" << s.n << "x" << s.k << " alpha=" << alpha << " beta=" << beta;
      EXPECT_TRUE(o.words_match) << algo << " " << s.m << "x" << s.n << "x" << s.k << ": "
                                 << o.note;
    }
  }
}

TEST_P(AlgorithmTest, DoubleMatchesBlasReference) { check_all_shapes<double>(GetParam()); }
TEST_P(AlgorithmTest, FloatMatchesBlasReference) { check_all_shapes<float>(GetParam()); }
TEST_P(AlgorithmTest, ComplexFloatMatchesBlasReference) { check_all_shapes<std::complex<float>>(GetParam()); }
TEST_P(AlgorithmTest, ComplexDoubleMatchesBlasReference) { check_all_shapes<std::complex<double>>(GetParam()); }

INSTANTIATE_TEST_SUITE_P(All, AlgorithmTest,
                         ::testing::Values("summa", "cannon", "dns", "scalapack", "cuboid", "auto"));

TEST(Summa, NarrowPanelsAndForcedGrids) {
  int P;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  for (int rows : {1, P}) {
    AlgoOptions o;
    o.panel = 3;
    o.grid_rows = rows;
    auto r = multiply_and_compare<double>("summa", "blas", 29, 31, 37, 1.0, 1.0, o);
    EXPECT_EQ(r.max_err, 0.0) << "grid rows " << rows;
    EXPECT_TRUE(r.words_match) << r.note;
  }
}

// Local products long enough to be cut for progress calls (gemm_with_progress: column chunks
// of >= 512, and chunks of k of >= 256 where C is narrow) while the next panel or block travels:
// the pieces must add up to the whole product, beta applied once.
TEST(Overlap, ChunkedProductsWhileTransfersPendStayExact) {
  int P;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  for (Shape s : {Shape{301, 257, 1100}, Shape{97, 1200, 2101}, Shape{1030, 40, 1500}}) {
    for (const char* algo : {"summa", "cannon", "cuboid"}) {
      AlgoOptions o;
      if (std::string(algo) == "cuboid") o.cuboid_steps = 3;  // k-steps: the gathers overlap products
      auto r = multiply_and_compare<double>(algo, "blas", s.m, s.n, s.k, -2.0, 3.0, o);
      if (r.skipped) continue;  // cannon on a rank count that is not a square
      EXPECT_EQ(r.max_err, 0.0) << algo << " P=" << P << " " << s.m << "x" << s.n << "x" << s.k;
      EXPECT_TRUE(r.words_match) << algo << ": " << r.note;
    }
  }
}

// Cuboid with forced grids (idle ranks, layers that sum C, pm or pn of 1) and several k-steps,
// every dtype, against BLAS on the gathered operands; measured words equal the analytic count.
TEST(Cuboid, ForcedGridsAndSteps) {
  int P;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  std::vector<std::array<int, 3>> grids{{1, 1, 1}, {1, 1, P}, {P, 1, 1}, {1, P, 1}};
  for (int pm = 1; pm <= P; ++pm)
    for (int pn = 1; pm * pn <= P; ++pn) grids.push_back({pm, pn, P / (pm * pn)});
  if (P > 2) grids.push_back({1, 2, (P - 1) / 2});  // idle ranks
  for (const auto& g : grids)
    for (int steps : {1, 3}) {
      AlgoOptions o;
      o.cuboid_grid = g;
      o.cuboid_steps = steps;
      const std::string what = std::to_string(g[0]) + "x" + std::to_string(g[1]) + "x" + std::to_string(g[2]) +
                               " steps " + std::to_string(steps) + " P=" + std::to_string(P);
      auto d = multiply_and_compare<double>("cuboid", "blas", 37, 29, 41, 1.0, 0.5, o);
      EXPECT_EQ(d.max_err, 0.0) << what;
      EXPECT_TRUE(d.words_match) << what << ": " << d.note;
      auto z = multiply_and_compare<std::complex<float>>("cuboid", "winograd", 23, 31, 19, {1, 1}, 0.0, o,
                                                         [] { EngineOptions e; e.levels = 1; e.cutoff = 2; return e; }());
      EXPECT_EQ(z.max_err, 0.0) << what << " c32 winograd";
    }
}

TEST(Scalapack, SmallBlocks) {
  AlgoOptions o;
  o.scalapack_nb = 4;
  auto r = multiply_and_compare<double>("scalapack", "blas", 23, 29, 31, 1.5, -0.5, o);
  EXPECT_EQ(r.max_err, 0.0);
}

TEST(RankCounts, WrongCountsNameTheValidOnes) {
  Comm world = Comm::world();
  const int P = world.size();
  for (const char* algo : {"cannon", "dns"}) {
    try {
      make_algorithm(distmm::testing::algorithm_named(algo), world, {8, 8, 8}, {});
    } catch (const UsageError& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("got " + std::to_string(P)), std::string::npos) << msg;
      EXPECT_NE(msg.find("--algo summa"), std::string::npos) << msg;
    }
  }
  EXPECT_THROW(distmm::testing::algorithm_named("strassen-magic"), UsageError);
}

}  // namespace

// Every CPU engine as the local engine of every algorithm, every dtype (integer inputs: exact).
template <class T>
void engines_under_algorithms(std::complex<double> alpha, std::complex<double> beta) {
  int P;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  for (const char* algo : {"summa", "cannon", "dns"})
    for (const EngineInfo& info : engine_registry()) {
      if (info.memory != Memory::host || info.name == "blas") continue;
      EngineOptions eo;
      eo.levels = 2;
      eo.cutoff = 2;
      eo.block = 4;
      for (const Shape& s : {Shape{37, 29, 41}, Shape{16, 16, 16}, Shape{1, 9, 5}}) {
        auto o = multiply_and_compare<T>(algo, info.name, s.m, s.n, s.k, alpha, beta, {}, eo);
        if (o.skipped) break;
        EXPECT_EQ(o.max_err, 0.0) << algo << "/" << info.name << " " << DtypeTraits<T>::name
                                  << " P=" << P << " " << s.m << "x" << s.n << "x" << s.k;
      }
    }
}

// Every GPU engine (cuBLAS, the Strassen-like ones, the INT8-emulated ones) as the local engine of
// the algorithms that fit P, through the engines' host API (operands staged to the rank's GPU,
// held outputs): integer inputs, exact. Skipped, visibly, where no GPU is seen.
template <class T>
void gpu_engines_under_algorithms(std::complex<double> alpha, std::complex<double> beta) {
  for (const char* algo : {"summa", "cannon", "dns", "cuboid", "caps"})
    for (const EngineInfo& info : engine_registry()) {
      if (info.memory != Memory::device || !info.dtypes.contains(dtype_of<T>())) continue;
      EngineOptions eo;
      eo.levels = 1;
      for (const Shape& s : {Shape{37, 29, 41}, Shape{1, 9, 5}}) {
        auto o = multiply_and_compare<T>(algo, info.name, s.m, s.n, s.k, alpha, beta, {}, eo);
        if (o.skipped) break;
        EXPECT_EQ(o.max_err, 0.0) << algo << "/" << info.name << " " << DtypeTraits<T>::name << " "
                                  << s.m << "x" << s.n << "x" << s.k;
      }
    }
}
TEST(EnginesUnderAlgorithms, ExactWithEveryGpuEngine) {
  if (gpu_count() == 0) GTEST_SKIP() << "no GPU visible (" << gpu_summary() << "): GPU engines under MPI not run";
  gpu_engines_under_algorithms<double>(1.0, 1.0);
  gpu_engines_under_algorithms<float>(2.0, 0.0);
  gpu_engines_under_algorithms<std::complex<double>>({1, -1}, {0, 2});
}

TEST(EnginesUnderAlgorithms, ExactWithEveryEngineReal) {
  engines_under_algorithms<double>(1.0, 1.0);
  engines_under_algorithms<float>(2.0, 0.0);
}
TEST(EnginesUnderAlgorithms, ExactWithEveryEngineComplex) {
  engines_under_algorithms<std::complex<double>>({1, -1}, {0, 2});
  engines_under_algorithms<std::complex<float>>({2, 0}, 0.0);
}
