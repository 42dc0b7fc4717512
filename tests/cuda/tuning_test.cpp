// The wave fill that decides where a tuned leaf configuration still applies, and the levels it
// leads gpu-winograd to (cuda/tuning.hpp):
// plain arithmetic, checked in every build; and the tuning file's leaf shapes (tuning_file.cpp).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

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

TEST(WaveFill, LeavesRunConcurrentlyWhereOneLeavesSmsIdle) {
  // Under 2048^2 outputs, whatever the tiles (tuned 128 x 64 ones fill 97% at 1024^2).
  EXPECT_TRUE(leaves_run_concurrently(1024, 1024, 128, 64, 132));
  EXPECT_TRUE(leaves_run_concurrently(2047, 2048, 0, 0, 132));
  EXPECT_TRUE(leaves_run_concurrently(1, 1, 0, 0, 0));
  // From 2048^2, only a partial last wave of known tiles: 6144 x 3072 in 256 x 128 tiles (87%),
  // 3072^2 (73%); not 128 x 64 tiles there (2304 tiles, 97% of 18 waves), nor 2048^2, 4096 x
  // 2048 and 6144^2 in 256 x 128 (97%), nor where cuBLAS's tiles are not known.
  EXPECT_TRUE(leaves_run_concurrently(6144, 3072, 256, 128, 132));
  EXPECT_TRUE(leaves_run_concurrently(3072, 3072, 256, 128, 132));
  EXPECT_FALSE(leaves_run_concurrently(6144, 3072, 128, 64, 132));
  EXPECT_FALSE(leaves_run_concurrently(2048, 2048, 256, 128, 132));
  EXPECT_FALSE(leaves_run_concurrently(4096, 2048, 256, 128, 132));
  EXPECT_FALSE(leaves_run_concurrently(6144, 6144, 256, 128, 132));
  EXPECT_FALSE(leaves_run_concurrently(6144, 3072, 0, 0, 132));
  EXPECT_FALSE(leaves_run_concurrently(6144, 3072, 256, 128, 0));
  // The threshold is a tenth of the waves idle: 0.9 exactly does not pair (6912 x 2816: 594
  // tiles in 5 waves), nor 6400 x 3072 (600 tiles, 91%).
  EXPECT_EQ(wave_fill(6912, 2816, 256, 128, 132), 0.9);
  EXPECT_FALSE(leaves_run_concurrently(6912, 2816, 256, 128, 132));
  EXPECT_FALSE(leaves_run_concurrently(6400, 3072, 256, 128, 132));
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

TEST(TunedShapes, NamesParseBack) {
  EXPECT_EQ(shape_name(6144, 3072, 6144), "6144x3072x6144");
  const auto s = parse_shape_name("6144x3072x6144");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ((*s)[0], 6144);
  EXPECT_EQ((*s)[1], 3072);
  EXPECT_EQ((*s)[2], 6144);
  EXPECT_TRUE(parse_shape_name("1x7x9999999").has_value());
  for (const char* bad : {"", "6144", "6144x3072", "6144x3072x6144x1", "0x1x1", "1x-2x3", "ax1x1", " 1x2x3",
                          "1x2x3 ", "1xx2x3", "1X7x1", "1x2x99999999"})
    EXPECT_FALSE(parse_shape_name(bad).has_value()) << "'" << bad << "'";
}

TEST(TunedShapes, RecordedShapesReadBackExactly) {
  const std::string file = ::testing::TempDir() + "distmm_tuned_shapes_test.json";
  std::remove(file.c_str());
  GemmConfig c;
  c.algo = 55, c.tile = 24, c.stages = 31, c.swizzle = 1, c.custom = 2, c.cluster = 5;
  record_tuned_gemm(file, "GPU", "f32", 4096, c, 10.0, 11.0);  // a square size beside them
  record_tuned_gemm_shape(file, "GPU", "f32", 6144, 3072, 6144, c, 5.0, 6.0, true, false);
  record_tuned_gemm_shape(file, "GPU", "f32", 4096, 2048, 4096, std::nullopt, 3.0, 3.0);
  {  // how each time was taken: two at a time (per product) or alone
    std::ifstream in(file);
    const nlohmann::json j = nlohmann::json::parse(in);
    const nlohmann::json& e = j["GPU"]["gemm-f32-shapes"]["6144x3072x6144"];
    EXPECT_EQ(e["paired"], true);
    EXPECT_EQ(e["cublas_paired"], false);
    EXPECT_EQ(e["micros"], 5.0);
    EXPECT_EQ(j["GPU"]["gemm-f32-shapes"]["4096x2048x4096"]["paired"], false);
    EXPECT_EQ(j["GPU"]["gemm-f32"]["4096"]["cublas_paired"], false);
  }
  const ShapeTuning hit = tuned_gemm_shape("GPU", "f32", 6144, 3072, 6144, file);
  ASSERT_TRUE(hit.tuned);
  ASSERT_TRUE(hit.config.has_value());
  EXPECT_EQ(hit.config->algo, 55);
  EXPECT_EQ(hit.config->tile, 24);
  EXPECT_EQ(hit.config->stages, 31);
  EXPECT_EQ(hit.config->swizzle, 1);
  EXPECT_EQ(hit.config->custom, 2);
  EXPECT_EQ(hit.config->cluster, 5);
  // cuBLAS's own choice won at this shape: tuned, with no configuration.
  const ShapeTuning kept = tuned_gemm_shape("GPU", "f32", 4096, 2048, 4096, file);
  EXPECT_TRUE(kept.tuned);
  EXPECT_FALSE(kept.config.has_value());
  // Only the exact shape, dtype and device.
  EXPECT_FALSE(tuned_gemm_shape("GPU", "f32", 3072, 6144, 6144, file).tuned);
  EXPECT_FALSE(tuned_gemm_shape("GPU", "f64", 6144, 3072, 6144, file).tuned);
  EXPECT_FALSE(tuned_gemm_shape("other", "f32", 6144, 3072, 6144, file).tuned);
  EXPECT_FALSE(tuned_gemm_shape("GPU", "f32", 4096, 4096, 4096, file).tuned);
  std::remove(file.c_str());
}

TEST(TunedShapes, AShapeEntryOverridesTheSizeRule) {
  GemmConfig sized, shaped;
  sized.algo = 1, shaped.algo = 2;
  auto fills = [](const GemmConfig&) { return true; };
  auto does_not_fill = [](const GemmConfig&) { return false; };
  // No shape entry: the size's configuration where it fills, else none and misfit.
  LeafChoice c = choose_leaf_config({}, sized, fills);
  ASSERT_TRUE(c.config.has_value());
  EXPECT_EQ(c.config->algo, 1);
  EXPECT_FALSE(c.misfit);
  c = choose_leaf_config({}, sized, does_not_fill);
  EXPECT_FALSE(c.config.has_value());
  EXPECT_TRUE(c.misfit);
  c = choose_leaf_config({}, std::nullopt, does_not_fill);
  EXPECT_FALSE(c.config.has_value());
  EXPECT_FALSE(c.misfit);
  // A shape entry was measured at this shape: it runs whatever the fill, and is never misfit.
  c = choose_leaf_config({true, shaped}, sized, does_not_fill);
  ASSERT_TRUE(c.config.has_value());
  EXPECT_EQ(c.config->algo, 2);
  EXPECT_FALSE(c.misfit);
  c = choose_leaf_config({true, std::nullopt}, sized, fills);  // cuBLAS's choice won there
  EXPECT_FALSE(c.config.has_value());
  EXPECT_FALSE(c.misfit);
}

// The emulation's INT8 products ("i8"): recorded by `distmm tune --dtype i8` beside the leaves'
// entries, read back by size and by shape, and chosen by the leaves' rule (tuned_config).
TEST(TunedInt8, EntriesReadBackBesideTheLeaves) {
  const std::string file = ::testing::TempDir() + "distmm_tuned_int8_test.json";
  std::remove(file.c_str());
  GemmConfig c4, c8, leaf;
  c4.algo = 71, c4.tile = 20, c4.stages = 16, c4.swizzle = 1, c4.custom = 0, c4.cluster = 2;
  c8.algo = 72, c8.tile = 24, c8.stages = 17;
  leaf.algo = 5;
  record_tuned_gemm(file, "GPU", "f32", 4096, leaf, 900.0, 950.0, false, false);
  record_tuned_gemm(file, "GPU", "i8", 4096, c4, 100.0, 110.0);
  record_tuned_gemm(file, "GPU", "i8", 8192, c8, 700.0, 760.0);
  record_tuned_gemm(file, "GPU", "i8", 16384, std::nullopt, 5000.0, 5000.0);  // the heuristic won there
  record_tuned_gemm_shape(file, "GPU", "i8", 8192, 4096, 16384, c4, 300.0, 320.0);
  {
    std::ifstream in(file);
    const nlohmann::json j = nlohmann::json::parse(in);
    EXPECT_EQ(j["GPU"]["gemm-i8"]["8192"]["algo"], 72);
    EXPECT_EQ(j["GPU"]["gemm-i8"]["8192"]["cublas_micros"], 760.0);
    EXPECT_TRUE(j["GPU"]["gemm-i8"]["16384"]["algo"].is_null());
    EXPECT_EQ(j["GPU"]["gemm-i8-shapes"]["8192x4096x16384"]["algo"], 71);
    EXPECT_EQ(j["GPU"]["gemm-f32"]["4096"]["algo"], 5);  // the leaves' entry stays
  }
  // The largest tuned size <= n, with its size; none below the smallest or where the heuristic won.
  auto at = tuned_gemm("GPU", "i8", 12000, file);
  ASSERT_TRUE(at.has_value());
  EXPECT_EQ(at->algo, 72);
  EXPECT_EQ(at->tile, 24);
  EXPECT_EQ(at->stages, 17);
  EXPECT_EQ(at->size, 8192);
  at = tuned_gemm("GPU", "i8", 4096, file);
  ASSERT_TRUE(at.has_value());
  EXPECT_EQ(at->algo, 71);
  EXPECT_EQ(at->swizzle, 1);
  EXPECT_EQ(at->cluster, 2);
  EXPECT_EQ(at->size, 4096);
  EXPECT_FALSE(tuned_gemm("GPU", "i8", 4095, file).has_value());
  EXPECT_FALSE(tuned_gemm("GPU", "i8", 20000, file).has_value());
  EXPECT_FALSE(tuned_gemm("other", "i8", 8192, file).has_value());
  ASSERT_TRUE(tuned_gemm("GPU", "f32", 8192, file).has_value());
  EXPECT_EQ(tuned_gemm("GPU", "f32", 8192, file)->algo, 5);
  const ShapeTuning shape = tuned_gemm_shape("GPU", "i8", 8192, 4096, 16384, file);
  ASSERT_TRUE(shape.tuned && shape.config.has_value());
  EXPECT_EQ(shape.config->algo, 71);
  EXPECT_FALSE(tuned_gemm_shape("GPU", "f32", 8192, 4096, 16384, file).tuned);
  std::remove(file.c_str());
}

TEST(TunedInt8, TheExactShapeBeatsTheSizeAndAMisfitIsSkipped) {
  const std::string file = ::testing::TempDir() + "distmm_tuned_int8_choice_test.json";
  std::remove(file.c_str());
  // Tile id 1: 256 x 128 tiles of C; tile id 2: 128 x 64.
  auto tiles = [](int tile) { return tile == 1 ? std::pair<int, int>{256, 128} : std::pair<int, int>{128, 64}; };
  GemmConfig sized, shaped;
  sized.algo = 10, sized.tile = 1;
  shaped.algo = 20, shaped.tile = 2;
  record_tuned_gemm(file, "GPU", "i8", 4096, sized, 100.0, 110.0);
  record_tuned_gemm_shape(file, "GPU", "i8", 4096, 4352, 4096, shaped, 120.0, 130.0);
  record_tuned_gemm_shape(file, "GPU", "i8", 6144, 6144, 4096, std::nullopt, 200.0, 200.0);
  // 6144^2 outputs in 256 x 128 tiles fill 97% of 9 waves on 132 SMs: the size's entry.
  LeafChoice c = tuned_config("GPU", "i8", 6144, 6144, 6144, 132, tiles, file);
  ASSERT_TRUE(c.config.has_value());
  EXPECT_EQ(c.config->algo, 10);
  EXPECT_EQ(c.config->size, 4096);
  // 4096 x 4352 (OpA x OpB) fills 82% (544 tiles in 5 waves): the size's entry would be skipped,
  // but the exact shape was tuned, and its entry runs.
  EXPECT_LT(wave_fill(4096, 4352, 256, 128, 132), kTunedMinFill);
  c = tuned_config("GPU", "i8", 4096, 4352, 4096, 132, tiles, file);
  ASSERT_TRUE(c.config.has_value());
  EXPECT_EQ(c.config->algo, 20);
  EXPECT_FALSE(c.misfit);
  // The same output with another Kp has no shape entry: the size's configuration misfits, none.
  c = tuned_config("GPU", "i8", 4096, 4352, 8192, 132, tiles, file);
  EXPECT_FALSE(c.config.has_value());
  EXPECT_TRUE(c.misfit);
  // An exact shape where the heuristic won: none, though the size's entry would fill.
  c = tuned_config("GPU", "i8", 6144, 6144, 4096, 132, tiles, file);
  EXPECT_FALSE(c.config.has_value());
  EXPECT_FALSE(c.misfit);
  // Below the smallest tuned size: none.
  EXPECT_FALSE(tuned_config("GPU", "i8", 2048, 8192, 8192, 132, tiles, file).config.has_value());
  std::remove(file.c_str());
}

TEST(TunedInt8, TilesFillAsWellAsAtTheirOwnSize) {
  // 256 x 128 tiles tuned at 4096 (97%): another output needs 85%.
  EXPECT_TRUE(tuned_tiles_fill(4096, 256, 128, 6144, 3072, 132));   // 87%
  EXPECT_FALSE(tuned_tiles_fill(4096, 256, 128, 3072, 3072, 132));  // 73%
  // Tuned at 3072 (73% there): as well as at its own size is enough.
  EXPECT_TRUE(tuned_tiles_fill(3072, 256, 128, 3072, 3072, 132));
  // Size or tiles unknown: 85%, or not judged.
  EXPECT_FALSE(tuned_tiles_fill(0, 256, 128, 3072, 3072, 132));
  EXPECT_TRUE(tuned_tiles_fill(4096, 0, 0, 3072, 3072, 132));
}
