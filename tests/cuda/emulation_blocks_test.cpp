// The INT8 emulation's blocks under a memory budget (cuda/emulation_blocks.hpp), on the host:
// the blocks fit, take no more Winograd levels than their shapes allow, and differ from the
// first blocks that fit (the rule before session 35, written out here) only where they take
// more levels.
#include <gtest/gtest.h>

#include <optional>
#include <cmath>
#include <random>
#include <string>
#include <tuple>

#include "cuda/emulation_blocks.hpp"

namespace distmm::emulation {
namespace {

using ozaki::LevelMode;
constexpr std::size_t GB = 1000000000ull;

// The rule before: the first row block height that fits, its widest panels, with as many of the
// levels its blocks take as the budget leaves room for.
std::optional<Sizes> first_fit(index_t m, index_t n, index_t k, bool cplx, int N, std::size_t budget, LevelMode mode,
                               bool a_held, bool level) {
  const int parts = cplx ? 2 : 1;
  for (index_t mb = m;; mb = round_up(mb / 2, 16)) {
    if (a_held && mb < m) return std::nullopt;
    const index_t least_nb = mb <= 256 ? 16 : std::min<index_t>(n, std::max<index_t>(mb / 4, 256));
    for (index_t nb = n;; nb = round_up(nb / 2, 16)) {
      Sizes z = sizes_for(mb, k, cplx, N, nb, a_held);
      if (z.total <= budget) {
        int wanted = 0;
        for (index_t r : {mb, m - (m - 1) / mb * mb})
          for (index_t w : {nb, n - (n - 1) / nb * nb})
            if (level) wanted = std::max(wanted, ozaki::residue_levels(mode, parts * r, parts * w, z.Kp, cplx));
        for (int lv = wanted; lv > 0; --lv)
          if (const Sizes zl = sizes_for(mb, k, cplx, N, nb, a_held, lv); zl.total <= budget) return zl;
        return z;
      }
      if (nb <= 16 || round_up(nb / 2, 16) < least_nb) break;
    }
    if (mb <= 16) return std::nullopt;
  }
}

// The most levels any of the blocks of z takes (the last row block and panel included).
int levels_of_blocks(const Sizes& z, index_t m, index_t n, bool cplx, LevelMode mode) {
  const int parts = cplx ? 2 : 1;
  int most = 0;
  for (index_t r : {z.mb, m - (m - 1) / z.mb * z.mb})
    for (index_t w : {z.nb, n - (n - 1) / z.nb * z.nb})
      most = std::max(most, ozaki::residue_levels(mode, parts * r, parts * w, z.Kp, cplx));
  return most;
}

TEST(EmulationBlocks, TheWholeProductWhereItFits) {
  for (LevelMode mode : {LevelMode::automatic, LevelMode::forced, LevelMode::forced_two, LevelMode::never}) {
    const std::optional<Sizes> z = fit_blocks(1024, 1024, 1024, false, 14, 100 * GB, mode, false, true);
    ASSERT_TRUE(z);
    EXPECT_EQ(z->mb, 1024);
    EXPECT_EQ(z->nb, 1024);
    // (auto: below kLevelFrom no level; forced: one; forced_two: two, 64 dividing 1024)
    EXPECT_EQ(z->levels, mode == LevelMode::forced ? 1 : mode == LevelMode::forced_two ? 2 : 0);
  }
  const std::optional<Sizes> big = fit_blocks(32768, 32768, 32768, false, 14, 100 * GB, LevelMode::automatic, false, true);
  ASSERT_TRUE(big);
  EXPECT_EQ(big->mb, 32768);
  EXPECT_EQ(big->nb, 32768);
  EXPECT_EQ(big->levels, 2);
}

// Room for every modulus' first-level sums (made beside the slices): N - 1 more slices' worth per
// operand, after the slices, products and residues as before; nothing without a level.
TEST(EmulationBlocks, SumsOfEveryModulusTakeASliceEachMore) {
  for (int levels : {0, 1, 2})
    for (const auto& [m, nb, k, cplx] : {std::tuple<index_t, index_t, index_t, bool>{16384, 16384, 16384, false},
                                         {4096, 2048, 1000, true}, {64, 96, 160, false}}) {
      const Sizes z = sizes_for(m, k, cplx, 14, nb, false, levels);
      const Sizes w = with_sums_of_every_modulus(z, 14);
      if (levels == 0) {
        EXPECT_EQ(w.total, z.total);
        EXPECT_EQ(w.sums_slots, 1);
        continue;
      }
      const std::size_t a = align256(std::size_t(z.Kp) * z.OpA), b = align256(std::size_t(z.Kp) * z.OpB);
      EXPECT_EQ(w.sums_slots, 14);
      EXPECT_EQ(w.sums_a, z.sums_a + 13 * a);
      EXPECT_EQ(w.sums_b, z.sums_b + 13 * b);
      EXPECT_EQ(w.total, z.total + 13 * (a + b));
      // (each slot holds a modulus' four sums: one slice of op(A), one of a panel of op(B))
      EXPECT_GE(a, std::size_t(z.Kp) * z.OpA);
      EXPECT_EQ(w.slices_a, z.slices_a);
      EXPECT_EQ(w.c32, z.c32);
      EXPECT_EQ(with_sums_of_every_modulus(w, 14).total, w.total);  // (already there)
      EXPECT_EQ(with_sums_of_every_modulus(z, 1).total, z.total);
    }
}

// f64 49152 on an H200 (141 GB, the operands 58 GB: a budget of about 0.9 x 83 GB): the first
// blocks that fit, 49152 x 12288, are too narrow for a level; 24576 x 24576 take one.
TEST(EmulationBlocks, F64At49152TakesBlocksWithALevel) {
  const std::size_t budget = 74 * GB;
  const std::optional<Sizes> before = first_fit(49152, 49152, 49152, false, 14, budget, LevelMode::automatic, false, true);
  ASSERT_TRUE(before);
  EXPECT_EQ(before->mb, 49152);
  EXPECT_EQ(before->nb, 12288);
  EXPECT_EQ(before->levels, 0);
  const std::optional<Sizes> z = fit_blocks(49152, 49152, 49152, false, 14, budget, LevelMode::automatic, false, true);
  ASSERT_TRUE(z);
  EXPECT_EQ(z->mb, 24576);
  EXPECT_EQ(z->nb, 24576);
  EXPECT_EQ(z->levels, 1);
  EXPECT_LE(z->total, budget);
  // without levels wanted, the first blocks that fit
  const std::optional<Sizes> plain = fit_blocks(49152, 49152, 49152, false, 14, budget, LevelMode::automatic, false, false);
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->mb, 49152);
  EXPECT_EQ(plain->nb, 12288);
  // under a 20 GiB cap (an 80 GB GPU): smaller blocks, too small for a level
  const std::optional<Sizes> capped =
      fit_blocks(49152, 49152, 49152, false, 14, std::size_t(20) << 30, LevelMode::automatic, false, true);
  ASSERT_TRUE(capped);
  EXPECT_LT(capped->mb, 16384);
  EXPECT_EQ(capped->levels, 0);
  EXPECT_LE(capped->total, std::size_t(20) << 30);
}

TEST(EmulationBlocks, NothingFitsIsNullopt) {
  EXPECT_FALSE(fit_blocks(1000, 1000, 1000, false, 14, 1000, LevelMode::automatic, false, true));
  // op(A)'s slices held: whole rows only
  EXPECT_FALSE(fit_blocks(49152, 49152, 49152, false, 14, std::size_t(20) << 30, LevelMode::automatic, true, true));
}

// Over shapes (primes, 1, skinny, level-sized), both types, N, budgets, modes and held slices:
// the blocks fit and are self-consistent; they exist exactly where the first fit does; they take
// at least its levels, and where they take no more they are its blocks.
TEST(EmulationBlocks, TheBlocksFitAndTakeLevelsOnlyWhereTheyPay) {
  std::mt19937_64 g(35);
  const index_t dims[] = {1, 2, 7, 16, 17, 97, 256, 1000, 4099, 16384, 20000, 24576, 32768, 40000, 49152, 65536};
  const LevelMode modes[] = {LevelMode::automatic, LevelMode::forced, LevelMode::forced_two, LevelMode::never};
  std::uniform_real_distribution<double> log_budget(6, 11.5);  // 1 MB .. 300 GB
  int cases = 0, more_levels = 0;
  for (int t = 0; t < 6000; ++t) {
    const index_t m = dims[g() % std::size(dims)], n = dims[g() % std::size(dims)], k = dims[g() % std::size(dims)];
    const bool cplx = g() % 4 == 0, a_held = g() % 5 == 0, level = g() % 4 != 0;
    const int N = int(2 + g() % 15);
    const LevelMode mode = modes[g() % std::size(modes)];
    const std::size_t budget = std::size_t(std::pow(10.0, log_budget(g)));
    const std::optional<Sizes> z = fit_blocks(m, n, k, cplx, N, budget, mode, a_held, level);
    const std::optional<Sizes> f = first_fit(m, n, k, cplx, N, budget, mode, a_held, level);
    const std::string what = "m " + std::to_string(m) + " n " + std::to_string(n) + " k " + std::to_string(k) +
                             " cplx " + std::to_string(cplx) + " N " + std::to_string(N) + " budget " +
                             std::to_string(budget) + " mode " + std::to_string(int(mode)) + " held " +
                             std::to_string(a_held) + " level " + std::to_string(level);
    ASSERT_EQ(bool(z), bool(f)) << what;
    if (!z) continue;
    ++cases;
    EXPECT_LE(z->total, budget) << what;
    EXPECT_TRUE(z->mb >= 1 && z->mb <= std::max<index_t>(m, 16) && z->nb >= 1 && z->nb <= std::max<index_t>(n, 16))
        << what;
    if (a_held) EXPECT_EQ(z->mb, m) << what;
    const Sizes again = sizes_for(z->mb, k, cplx, N, z->nb, a_held, z->levels);
    EXPECT_EQ(again.total, z->total) << what;
    EXPECT_LE(z->levels, level ? levels_of_blocks(*z, m, n, cplx, mode) : 0) << what;
    EXPECT_GE(z->levels, f->levels) << what;
    if (z->levels == f->levels) {
      EXPECT_EQ(z->mb, f->mb) << what;
      EXPECT_EQ(z->nb, f->nb) << what;
    } else {
      ++more_levels;
    }
  }
  EXPECT_GT(cases, 2000);
  EXPECT_GT(more_levels, 10);  // (the sweep reaches the blocks that take a level)
}

}  // namespace
}  // namespace distmm::emulation
