#include "src/core/random.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace distmm;

TEST(Random, BlockValuesDoNotDependOnTheBlocking) {
  Matrix<double> whole(37, 23), part(10, 7);
  fill_random_block(whole.view(), 0, 0, 5, Stream::A, Fill::uniform);
  fill_random_block(part.view(), 13, 11, 5, Stream::A, Fill::uniform);
  for (index_t j = 0; j < 7; ++j)
    for (index_t i = 0; i < 10; ++i) EXPECT_EQ(part(i, j), whole(13 + i, 11 + j));
}

TEST(Random, StreamsAndSeedsDiffer) {
  EXPECT_NE(random_value(1, Stream::A, 3, 4, Fill::uniform),
            random_value(1, Stream::B, 3, 4, Fill::uniform));
  EXPECT_NE(random_value(1, Stream::A, 3, 4, Fill::uniform),
            random_value(2, Stream::A, 3, 4, Fill::uniform));
  EXPECT_NE(random_value(1, Stream::A, 3, 4, Fill::uniform),
            random_value(1, Stream::A, 4, 3, Fill::uniform));
}

TEST(Random, RangesAndMoments) {
  double sum = 0, sq = 0;
  const int n = 200000;
  for (int t = 0; t < n; ++t) {
    double v = random_value(9, Stream::A, t % 500, t / 500, Fill::uniform);
    ASSERT_GE(v, -1.0);
    ASSERT_LT(v, 1.0);
    sum += v, sq += v * v;
    double w = random_value(9, Stream::B, t % 500, t / 500, Fill::integer);
    ASSERT_EQ(w, std::round(w));
    ASSERT_GE(w, -4.0);
    ASSERT_LE(w, 4.0);
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sq / n, 1.0 / 3.0, 0.01);  // variance of U[-1,1)
}
