#include "mpi/bounds.hpp"

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
