#include "mpi/algorithms/block_cyclic_ksplit.hpp"

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
// Reports at the first checkpoint of a 4 x 4 grid: rate, elapsed, and 6 pieces before step 2.
std::vector<KReport> reports(const KSplitLayout& L, const std::vector<double>& spf, double at) {
  std::vector<KReport> x;
  const double piece = double(L.rows[0]) * double(L.cols[0]) * double(L.width(0));
  for (double s : spf) x.push_back({s, at, 6 * piece});
  return x;
}
}  // namespace

TEST(KSplitPlan, EqualRatesMoveNothing) {
  const KSplitLayout L = layout(4, 4, 4096, 256, 64, 64);
  const auto x = reports(L, std::vector<double>(16, 1e-9), 0.5);
  for (const KCheckpoint& cp : ksplit_checkpoints(4))
    EXPECT_TRUE(ksplit_plan(L, cp, x, {}, kKSplitSecPerWord, kKSplitMaxStolen).empty());
}

TEST(KSplitPlan, Checkpoints) {
  EXPECT_TRUE(ksplit_checkpoints(2).empty());  // two steps: nothing could move in time
  ASSERT_EQ(ksplit_checkpoints(3).size(), 1u);
  EXPECT_EQ(ksplit_checkpoints(3)[0].first, 2);
  for (int pc = 4; pc <= 9; ++pc) {
    const auto cps = ksplit_checkpoints(pc);
    ASSERT_EQ(cps.size(), 2u);
    EXPECT_GE(cps[0].first, 2) << pc;  // the first report comes in step 0
    EXPECT_GE(cps[1].first, ksplit_second_report(pc) + 2) << pc;  // a step of slack
    EXPECT_LT(cps[0].first, cps[1].first);
    EXPECT_EQ(cps[1].first, pc - 1);
  }
}

TEST(KSplitPlan, SlowRankGivesLatePiecesToFastRanks) {
  const KSplitLayout L = layout(4, 4, 65536, 256, 1024, 1024);
  std::vector<double> spf(16, 1.0 / 40e9);
  spf[5] = 1.0 / 25e9;   // 1.6x slower
  spf[11] = 1.0 / 50e9;  // faster
  auto x = reports(L, spf, 0.4);
  x[5].elapsed = 0.65, x[11].elapsed = 0.3;
  const auto cps = ksplit_checkpoints(4);
  std::vector<double> pred;
  const auto moves = ksplit_plan(L, cps[0], x, {}, kKSplitSecPerWord, kKSplitMaxStolen, nullptr, &pred);
  ASSERT_FALSE(moves.empty());
  std::vector<int> taken(16, 0);
  for (const KMove& m : moves) {
    EXPECT_EQ(m.victim, 5);  // only the slow rank is late enough to give
    EXPECT_NE(m.thief, 5);
    EXPECT_GE(m.step, cps[0].first);
    const int c = ksplit_col(L, m.victim, m.step);
    EXPECT_NE(L.rank(m.row, c), m.victim);  // never its own block of C
    EXPECT_NE(L.rank(m.row, c), m.thief);   // nor the thief's
    EXPECT_LE(++taken[m.thief], kKSplitMaxStolen);
  }
  EXPECT_EQ(moves.front().thief, 11);  // the fastest first
  EXPECT_LE(moves.size(), 7u);         // at most its last two steps' pieces, less its own block
  const double before = 0.65 + (6 + 8) * double(1024) * 1024 * 4096 * spf[5];
  EXPECT_LT(*std::max_element(pred.begin(), pred.end()), before);  // the last finish comes earlier

  // The second checkpoint, the slow rank still slow: only late ranks give, only last-step
  // pieces move, never a piece moved before, and no thief over its limit over both plans.
  const std::vector<char> late = rate_late(pred, spf);
  EXPECT_TRUE(late[5]);  // still among the last after the first plan
  auto x2 = x;
  for (auto& r : x2) r.elapsed += 1.2, r.flops_before = 4 * double(1024) * 1024 * 4096;
  x2[5].elapsed += 0.5;
  const auto more = ksplit_plan(L, cps[1], x2, moves, kKSplitSecPerWord, kKSplitMaxStolen, &late);
  for (const KMove& m : more) {
    EXPECT_EQ(m.step, 3);
    EXPECT_TRUE(late[m.victim]);
    for (const KMove& e : moves) EXPECT_FALSE(e.victim == m.victim && e.step == m.step && e.row == m.row);
    EXPECT_LE(++taken[m.thief], kKSplitMaxStolen);
  }
}

TEST(KSplitPlan, UnknownRatesNeitherGiveNorTake) {
  const KSplitLayout L = layout(2, 4, 4096, 256, 64, 64);
  std::vector<double> spf(8, 0);
  spf[0] = 1e-6;  // the others' rates unknown: no thief
  EXPECT_TRUE(ksplit_plan(L, ksplit_checkpoints(4)[0], reports(L, spf, 0.1), {}, 0, 2).empty());
}
