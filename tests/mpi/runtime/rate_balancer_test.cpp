#include "mpi/runtime/rate_balancer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

using namespace distmm;

namespace {
// P ranks, each starting at 0 with `n` items of `work` units (and `words` each) to give.
std::vector<RateRank> ranks_with(const std::vector<double>& spf, int n, double work = 1, double words = 0) {
  std::vector<RateRank> v(spf.size());
  for (std::size_t t = 0; t < spf.size(); ++t) {
    v[t].sec_per_work = spf[t], v[t].work = n * work;
    v[t].items.assign(static_cast<std::size_t>(n), RateItem{work, words, -1});
  }
  return v;
}
double latest(const std::vector<RateRank>& v, double sec_per_word = 0) {
  double m = 0;
  for (const RateRank& r : v) m = std::max(m, rate_finish(r, sec_per_word));
  return m;
}
}  // namespace

TEST(RateBalancer, Finish) {
  RateRank r;
  r.sec_per_work = 2, r.ready = 1, r.work = 3, r.words = 10;
  EXPECT_DOUBLE_EQ(rate_finish(r, 0.5), 1 + 6 + 5);
}

TEST(RateBalancer, EqualRatesMoveNothing) {
  const auto v = ranks_with(std::vector<double>(8, 1e-3), 10);
  std::vector<double> finish;
  EXPECT_TRUE(rate_balance(v, {}, &finish).empty());
  ASSERT_EQ(finish.size(), 8u);
  for (double f : finish) EXPECT_DOUBLE_EQ(f, 10e-3);
  // Round-robin shares that differ by one item: moving it back and forth does not pay.
  const auto shares = rate_shares(13, std::vector<double>(4, 1.0));
  EXPECT_EQ(shares, (std::vector<index_t>{4, 3, 3, 3}));
}

TEST(RateBalancer, SlowRankShedsWork) {
  std::vector<double> spf(6, 1.0);
  spf[2] = 3.0;
  const auto v = ranks_with(spf, 12);
  std::vector<double> finish;
  const auto moves = rate_balance(v, {}, &finish);
  ASSERT_FALSE(moves.empty());
  std::vector<std::size_t> next(6, 0);
  for (const RateMove& m : moves) {
    EXPECT_EQ(m.victim, 2);  // only the slow rank is late
    EXPECT_NE(m.thief, 2);
    EXPECT_EQ(m.item, next[std::size_t(m.victim)]++);  // its items in order
  }
  const double before = latest(v);
  const double after = *std::max_element(finish.begin(), finish.end());
  EXPECT_DOUBLE_EQ(before, 36.0);
  EXPECT_LT(after, 0.6 * before);
  // The shares: the slow rank about a third of a fast one's, and no item lost.
  spf.assign(4, 1.0);
  spf[0] = 3.0;
  const auto n = rate_shares(100, spf);
  EXPECT_EQ(std::accumulate(n.begin(), n.end(), index_t(0)), 100);
  EXPECT_LT(n[0], n[1]);
  EXPECT_NEAR(double(n[0]), 10.0, 1.0);  // 3 n0 = n1 = n2 = n3, n0 + n1 + n2 + n3 = 100
  for (int r = 1; r < 4; ++r) EXPECT_NEAR(double(n[std::size_t(r)]), 30.0, 1.0);
}

TEST(RateBalancer, FastestThiefFirst) {
  std::vector<double> spf(4, 1.0);
  spf[0] = 2.0, spf[3] = 0.5;
  const auto moves = rate_balance(ranks_with(spf, 8), {});
  ASSERT_FALSE(moves.empty());
  EXPECT_EQ(moves.front().victim, 0);
  EXPECT_EQ(moves.front().thief, 3);
}

TEST(RateBalancer, Constraints) {
  std::vector<double> spf(4, 1.0);
  spf[0] = 4.0;
  // The item's barred rank never takes it; may_take = false never takes.
  auto v = ranks_with(spf, 6);
  for (RateItem& it : v[0].items) it.barred = 1;
  v[2].may_take = false;
  const auto barred = rate_balance(v, {});
  ASSERT_FALSE(barred.empty());
  for (const RateMove& m : barred) {
    if (m.victim == 0) EXPECT_NE(m.thief, 1);  // (rank 3, loaded, may pass its own on to rank 1)
    EXPECT_NE(m.thief, 2);
  }
  // The cap counts the items taken earlier.
  v = ranks_with(spf, 6);
  v[1].taken = 1;
  std::vector<int> taken(4, 0);
  taken[1] = 1;
  const auto capped = rate_balance(v, {0, 2, 0.1});
  ASSERT_FALSE(capped.empty());
  for (const RateMove& m : capped) EXPECT_LE(++taken[std::size_t(m.thief)], 2);
  EXPECT_LE(capped.size(), 5u);  // 1 (rank 1) + 2 + 2
  // A price per word that eats the gain moves nothing.
  v = ranks_with(spf, 6, 1, 1000);
  EXPECT_TRUE(rate_balance(v, {1.0, INT_MAX, 0.1}).empty());
  // The margin: a gain of less than it moves nothing. Rank 0 finishes at 1.1, rank 1 at 1.0, one
  // item of 0.1 each: moving it gives 1.1 (the thief) against 1.1 - 0.1 * margin.
  std::vector<RateRank> w(2);
  for (RateRank& r : w) r.sec_per_work = 0.1, r.work = 10, r.items.assign(10, RateItem{1, 0, -1});
  w[0].work = 11, w[0].items.push_back(RateItem{1, 0, -1});
  EXPECT_TRUE(rate_balance(w, {0, INT_MAX, 0.1}).empty());
  w[0].work = 13;  // 1.3 against 1.0: one item moves (1.2, 1.1), then 1.2 against 1.1 + 0.1 stays
  EXPECT_EQ(rate_balance(w, {0, INT_MAX, 0.1}).size(), 1u);
  // Unknown rates neither give nor take.
  v = ranks_with({1.0, 0.0, 0.0}, 5);
  EXPECT_TRUE(rate_balance(v, {}).empty());
  EXPECT_EQ(rate_shares(10, {0.0, 0.0, 5.0}), (std::vector<index_t>{4, 3, 3}));
}

TEST(RateBalancer, Deterministic) {
  std::vector<double> spf = {1.3, 0.7, 2.9, 1.1, 0.9, 1.7, 3.3, 1.0};
  auto v = ranks_with(spf, 20, 2.5, 3);
  for (std::size_t t = 0; t < v.size(); ++t) v[t].ready = 0.1 * double(t);
  const auto a = rate_balance(v, {0.01, 5, 0.1});
  const auto b = rate_balance(v, {0.01, 5, 0.1});
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].victim, b[i].victim);
    EXPECT_EQ(a[i].item, b[i].item);
    EXPECT_EQ(a[i].thief, b[i].thief);
  }
  EXPECT_EQ(rate_shares(343, spf), rate_shares(343, spf));
}

TEST(RateBalancer, LateRanksAndSkew) {
  // Known rates only: the median of {1, 2, 3, 4} (upper) is 3.
  const auto late = rate_late({1, 2, 3, 4, 9}, {1, 1, 1, 1, 0});
  EXPECT_EQ(late, (std::vector<char>{0, 0, 1, 1, 0}));
  EXPECT_EQ(rate_late({1, 2}, {0, 0}), (std::vector<char>{0, 0}));
  const Skew s{2, 3.0};
  EXPECT_DOUBLE_EQ(skewed(s, 2, 1.5), 4.5);
  EXPECT_DOUBLE_EQ(skewed(s, 1, 1.5), 1.5);
  EXPECT_DOUBLE_EQ(skewed(Skew{}, 0, 1.5), 1.5);
}
