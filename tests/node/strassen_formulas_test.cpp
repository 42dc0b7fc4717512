// The coefficient tables that CAPS and every Strassen-like schedule share satisfy Brent's
// equations: sum_p a[p][(i,l)] b[p][(l',j)] c[p][(i',j')] = [l = l'][i = i'][j = j'], i.e. the
// seven products reproduce the 2 x 2 block product exactly, over any ring.
#include <gtest/gtest.h>

#include "node/strassen_formulas.hpp"

using namespace distmm;

namespace {

void expect_brent(const BilinearFormula& f) {
  auto q = [](int r, int c) { return 2 * r + c; };  // quadrant index of block (r, c)
  for (int i = 0; i < 2; ++i)
    for (int l = 0; l < 2; ++l)
      for (int l2 = 0; l2 < 2; ++l2)
        for (int j = 0; j < 2; ++j)
          for (int i2 = 0; i2 < 2; ++i2)
            for (int j2 = 0; j2 < 2; ++j2) {
              int sum = 0;
              for (int p = 0; p < 7; ++p) sum += f.a[p][q(i, l)] * f.b[p][q(l2, j)] * f.c[p][q(i2, j2)];
              const int want = (l == l2 && i == i2 && j == j2) ? 1 : 0;
              EXPECT_EQ(sum, want) << f.name << ": A" << i << l << " B" << l2 << j << " C" << i2 << j2;
            }
}

}  // namespace

TEST(StrassenFormulas, StrassenSatisfiesBrentEquations) { expect_brent(kStrassenFormula); }
TEST(StrassenFormulas, WinogradSatisfiesBrentEquations) { expect_brent(kWinogradFormula); }

TEST(StrassenFormulas, HelpersPickRowsAndCoefficients) {
  constexpr auto rows = sum_rows<int, 2>(kStrassenFormula.a, {0, 6});
  EXPECT_EQ(rows[0], (std::array<int, 4>{1, 0, 0, 1}));
  EXPECT_EQ(rows[1], (std::array<int, 4>{0, 1, 0, -1}));
  // M1 and M4 into C11 and C22: C11 = M1 + M4 + ..., C22 = M1 + ... (M4 absent).
  constexpr auto c = c_coefficients<int, 2, 2>(kStrassenFormula, {0, 3}, {0, 3});
  EXPECT_EQ(c[0], (std::array<int, 2>{1, 1}));
  EXPECT_EQ(c[1], (std::array<int, 2>{1, 0}));
  EXPECT_TRUE(feeds_only(kWinogradFormula, 1, 0, 1));  // P2 -> C11
  EXPECT_FALSE(feeds_only(kWinogradFormula, 0, 0, 1));  // P1 feeds all four
}
