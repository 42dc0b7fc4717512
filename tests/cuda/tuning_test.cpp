// The wave fill that decides where a tuned leaf configuration still applies, and the levels it
// leads gpu-winograd to (cuda/tuning.hpp):
// plain arithmetic, checked in every build.
#include <gtest/gtest.h>

#include "cuda/tuning.hpp"

using namespace distmm;

TEST(WaveFill, TilesOverTheWavesOfTheSms) {
  // 256 x 128 tiles on 132 SMs (an H100): 2048^2 is 8 x 16 = 128 tiles in one wave.
  EXPECT_DOUBLE_EQ(wave_fill(2048, 2048, 256, 128, 132), 128.0 / 132);
  // 3072^2: 12 x 24 = 288 tiles, three waves of 132.
  EXPECT_DOUBLE_EQ(wave_fill(3072, 3072, 256, 128, 132), 288.0 / 396);
  // 4096^2 and 6144^2: 512 tiles in 4 waves, 1152 in 9.
  EXPECT_DOUBLE_EQ(wave_fill(4096, 4096, 256, 128, 132), 512.0 / 528);
  EXPECT_DOUBLE_EQ(wave_fill(6144, 6144, 256, 128, 132), 1152.0 / 1188);
  // A rectangular leaf counts its own tiles (rows of C in the tile's first dimension), and a
  // partial tile is a whole one: 6144 x 3072 is 24 x 24 = 576 tiles in 5 waves; 100 x 1 is one.
  EXPECT_DOUBLE_EQ(wave_fill(6144, 3072, 256, 128, 132), 576.0 / 660);
  EXPECT_DOUBLE_EQ(wave_fill(3072, 6144, 128, 256, 132), 576.0 / 660);
  EXPECT_DOUBLE_EQ(wave_fill(100, 1, 256, 128, 132), 1.0 / 132);
  // The tuned kernels' threshold lies between them.
  EXPECT_LT(wave_fill(3072, 3072, 256, 128, 132), 0.85);
  EXPECT_GE(wave_fill(6144, 3072, 256, 128, 132), 0.85);
  // Unknown tiles or SMs are not judged.
  EXPECT_EQ(wave_fill(3072, 3072, 0, 0, 132), 1.0);
  EXPECT_EQ(wave_fill(3072, 3072, 256, 128, 0), 1.0);
}

TEST(WaveFill, DeepestFittingLevel) {
  // f32 49152 on an H100's tuned kernels: 4 levels leave 3072 leaves (misfit), 3 leave 6144.
  EXPECT_EQ(deepest_fitting_level(4, [](int l) { return l == 4; }), 3);
  // Two misfit levels in a row are both skipped.
  EXPECT_EQ(deepest_fitting_level(4, [](int l) { return l >= 3; }), 2);
  // Nothing misfit: the threshold level stands.
  EXPECT_EQ(deepest_fitting_level(3, [](int) { return false; }), 3);
  // Every level misfit: the threshold level too (no tuned kernel would run anyway).
  EXPECT_EQ(deepest_fitting_level(4, [](int) { return true; }), 4);
  // Never below one level.
  EXPECT_EQ(deepest_fitting_level(2, [](int l) { return l == 2; }), 1);
  EXPECT_EQ(deepest_fitting_level(1, [](int) { return true; }), 1);
}
