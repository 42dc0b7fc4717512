#include "mpi/block_cyclic_ksplit.hpp"

#include <gtest/gtest.h>

#include <algorithm>

using namespace distmm;

namespace {
// A pr x pc grid, block-cyclic k of `k` in runs of `nb` (process column of A and process row of
// B cycling together), every process row and column holding `rows` and `cols`.
KSplitLayout layout(int pr, int pc, index_t k, index_t nb, index_t rows, index_t cols) {
  std::vector<KRun> runs;
  for (index_t k0 = 0, i = 0; k0 < k; k0 += nb, ++i) {
    const int qa = static_cast<int>(i % pc), qb = static_cast<int>(i % pr);
    runs.push_back({qa, qb, (i / pc) * nb, (i / pr) * nb, std::min(nb, k - k0)});
  }
  return ksplit_layout(pr, pc, 0, 0, std::vector<index_t>(pr, rows), std::vector<index_t>(pc, cols), runs);
}
}  // namespace

TEST(KSplitPlan, EqualRatesMoveNothing) {
  const KSplitLayout L = layout(4, 4, 4096, 256, 64, 64);
  std::vector<double> spf(16, 1e-9), el(16, 0.5);
  EXPECT_TRUE(ksplit_plan(L, spf, el, kKSplitSecPerWord, kKSplitMaxStolen).empty());
}

TEST(KSplitPlan, SlowRankGivesLastStepPiecesToFastRanks) {
  const KSplitLayout L = layout(4, 4, 65536, 256, 1024, 1024);
  std::vector<double> spf(16, 1.0 / 40e9), el(16, 0.9);
  spf[5] = 1.0 / 25e9, el[5] = 1.4;   // 1.6x slower
  spf[11] = 1.0 / 50e9, el[11] = 0.7; // faster
  const auto moves = ksplit_plan(L, spf, el, kKSplitSecPerWord, kKSplitMaxStolen);
  ASSERT_FALSE(moves.empty());
  std::vector<int> taken(16, 0);
  for (const KMove& m : moves) {
    EXPECT_EQ(m.victim, 5);  // only the slow rank is late enough to give
    EXPECT_NE(m.thief, 5);
    EXPECT_GE(m.step, ksplit_first_movable(L.npcol));
    const int c = ksplit_col(L, m.victim, m.step);
    EXPECT_NE(L.rank(m.row, c), m.victim);  // never its own block of C
    EXPECT_NE(L.rank(m.row, c), m.thief);   // nor the thief's
    EXPECT_LE(++taken[m.thief], kKSplitMaxStolen);
  }
  EXPECT_EQ(moves.front().thief, 11);  // the fastest first
  EXPECT_LE(moves.size(), 7u);         // at most its last two steps' pieces, less its own block
}

TEST(KSplitPlan, NeedsThreeStepsAndKnownRates) {
  const KSplitLayout L2 = layout(4, 2, 4096, 256, 64, 64);
  std::vector<double> spf(8, 1e-9), el(8, 0.1);
  spf[0] = 1e-6;
  EXPECT_TRUE(ksplit_plan(L2, spf, el, 0, 2).empty());  // two steps: nothing to move in time
  const KSplitLayout L = layout(2, 4, 4096, 256, 64, 64);
  std::vector<double> unknown(8, 0);
  unknown[0] = 1e-6;  // the others' rates unknown: no thief
  EXPECT_TRUE(ksplit_plan(L, unknown, el, 0, 2).empty());
}
