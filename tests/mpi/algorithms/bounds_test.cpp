#include "mpi/algorithms/bounds.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace distmm;

TEST(Bounds, ClassicalMemoryIndependentForSquare) {
  // With unlimited memory the 3-D bound 3 n^2 / P^(2/3) - 3 n^2 / P applies.
  const index_t n = 4096;
  const int P = 64;
  LowerBound b = classical_lower_bound(n, n, n, P, 1e30);
  double expect = 3.0 * n * n / std::pow(P, 2.0 / 3.0) - 3.0 * n * n / P;
  EXPECT_NEAR(b.words, expect, 1e-6 * expect);
}

TEST(Bounds, ClassicalMemoryDependentWhenMemoryIsTight) {
  const index_t n = 8192;
  const int P = 16;
  double M = 3.0 * n * n / P;  // 2-D algorithms: three blocks per rank
  LowerBound b = classical_lower_bound(n, n, n, P, M);
  double dep = double(n) * n * n / (2 * std::sqrt(2.0) * P * std::sqrt(M)) - M;
  EXPECT_GE(b.words, dep - 1e-6);
  EXPECT_GT(b.words, 0);
}

TEST(Bounds, StrassenBoundIsBelowClassicalForLargeN) {
  const index_t n = 1 << 14;
  const int P = 49;
  double M = 3.0 * n * n / P;
  EXPECT_LT(strassen_lower_bound(n, P, M).words,
            double(n) * n * n / (P * std::sqrt(M)));
}

// The three cases of the memory-independent bound on the sorted dimensions d1 >= d2 >= d3.
TEST(Bounds, ClassicalMemoryIndependentOnSkewedShapes) {
  // Two large dimensions (32768 x 32768 x 512, P = 16): 2 d3 sqrt(d1 d2/P) - (d1 d3 + d2 d3)/P,
  // which SUMMA's 4 x 4 grid attains: 6.29e6 words, not the 0 the cubic form gives.
  LowerBound flat = classical_lower_bound(32768, 32768, 512, 16, 1e30);
  EXPECT_NEAR(flat.words, 2.0 * 512 * 32768 / 4 - 2.0 * 32768 * 512 / 16, 1.0);
  EXPECT_NE(flat.which.find("two large"), std::string::npos) << flat.which;
  // One large dimension (P <= d1/d2): every rank needs all of the smallest matrix.
  LowerBound tall = classical_lower_bound(1 << 20, 64, 32, 8, 1e30);
  EXPECT_NEAR(tall.words, 64.0 * 32 * (1 - 1.0 / 8), 1e-6);
  // Three large dimensions: 4096 x 4096 x 65536 at P = 16 sits on the boundary d1 d2/d3^2 = 16.
  LowerBound deep = classical_lower_bound(4096, 4096, 65536, 16, 1e30);
  const double mnk = 4096.0 * 4096 * 65536;
  EXPECT_NEAR(deep.words, 3 * std::pow(mnk / 16, 2.0 / 3) - (4096.0 * 4096 + 2 * 4096.0 * 65536) / 16, 1e-3 * deep.words);
  // Any shape on more than one rank moves data, on one rank none.
  for (auto [m, n, k] : {std::array<index_t, 3>{1000, 10, 10}, {10, 1000, 10}, {7, 11, 13}, {512, 512, 1}})
    for (int P : {2, 3, 16, 1000}) EXPECT_GT(classical_lower_bound(m, n, k, P, 1e30).words, 0) << m << " " << n << " " << k << " P=" << P;
  EXPECT_EQ(classical_lower_bound(100, 200, 300, 1, 1e30).words, 0);
}
