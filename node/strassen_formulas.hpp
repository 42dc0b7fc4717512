// The coefficient tables of the two bilinear algorithms that multiply 2 x 2 block matrices with
// seven products, in one place: CAPS (mpi/caps.cpp) forms its sums and combinations from them,
// and the CPU and GPU schedules (strassen.hpp, strassen_lowmem.hpp, winograd.hpp) take their
// sums and C combinations from them. Quadrants are numbered 0 = 11, 1 = 12, 2 = 21, 3 = 22.
//   product p = (sum_q a[p][q] A_q) (sum_q b[p][q] B_q),   C_q = sum_p c[p][q] product_p
// tests/node/strassen_formulas_test.cpp checks both tables against Brent's equations.
#pragma once
#include <array>
#include <cstddef>

namespace distmm {

struct BilinearFormula {
  const char* name;
  int a[7][4], b[7][4], c[7][4];
  // Per-level factor on the classical error bound: 12 for Strassen's formula (Higham, Accuracy
  // and Stability, 2nd ed., Thm. 23.3), 18 for Winograd's variant (Sec. 23.2.2).
  double error_growth_per_level;
};

// Strassen (1969): M1..M7.
//   M1 = (A11 + A22)(B11 + B22), M2 = (A21 + A22) B11, M3 = A11 (B12 - B22), M4 = A22 (B21 - B11)
//   M5 = (A11 + A12) B22, M6 = (A21 - A11)(B11 + B12), M7 = (A12 - A22)(B21 + B22)
//   C11 = M1 + M4 - M5 + M7, C12 = M3 + M5, C21 = M2 + M4, C22 = M1 - M2 + M3 + M6
inline constexpr BilinearFormula kStrassenFormula = {
    "strassen",
    {{1, 0, 0, 1}, {0, 0, 1, 1}, {1, 0, 0, 0}, {0, 0, 0, 1}, {1, 1, 0, 0}, {-1, 0, 1, 0}, {0, 1, 0, -1}},
    {{1, 0, 0, 1}, {1, 0, 0, 0}, {0, 1, 0, -1}, {-1, 0, 1, 0}, {0, 0, 0, 1}, {1, 1, 0, 0}, {0, 0, 1, 1}},
    {{1, 0, 0, 1}, {0, 0, 1, -1}, {0, 1, 0, 1}, {1, 0, 1, 0}, {-1, 1, 0, 0}, {0, 0, 0, 1}, {1, 0, 0, 0}},
    12};

// Strassen-Winograd (Winograd 1971; 15 additions when the chained sums are shared):
//   S1 = A21 + A22, S2 = S1 - A11, S3 = A11 - A21, S4 = A12 - S2
//   T1 = B12 - B11, T2 = B22 - T1, T3 = B22 - B12, T4 = T2 - B21
//   P1 = A11 B11, P2 = A12 B21, P3 = S4 B22, P4 = A22 T4, P5 = S1 T1, P6 = S2 T2, P7 = S3 T3
//   C11 = P1 + P2, C12 = P1 + P6 + P5 + P3, C21 = P1 + P6 + P7 - P4, C22 = P1 + P6 + P7 + P5
// with the chained sums written out in the quadrants (S4 = A11 + A12 - A21 - A22, ...).
inline constexpr BilinearFormula kWinogradFormula = {
    "winograd",
    {{1, 0, 0, 0}, {0, 1, 0, 0}, {1, 1, -1, -1}, {0, 0, 0, 1}, {0, 0, 1, 1}, {-1, 0, 1, 1}, {1, 0, -1, 0}},
    {{1, 0, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}, {1, -1, -1, 1}, {-1, 1, 0, 0}, {1, -1, 0, 1}, {0, -1, 0, 1}},
    {{1, 1, 1, 1}, {1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, -1, 0}, {0, 1, 0, 1}, {0, 1, 1, 1}, {0, 0, 1, 1}},
    18};

// Rows `products` of an a- or b-table, as the coefficients of one fused sums pass.
template <class T, std::size_t NO>
constexpr std::array<std::array<T, 4>, NO> sum_rows(const int (&table)[7][4],
                                                    const std::array<int, NO>& products) {
  std::array<std::array<T, 4>, NO> r{};
  for (std::size_t o = 0; o < NO; ++o)
    for (int q = 0; q < 4; ++q) r[o][q] = T(table[products[o]][q]);
  return r;
}

// out_o = sum_i c[products[i]][quadrants[o]] in_i: the coefficients of a pass that folds the
// products `products` into the C quadrants `quadrants`.
template <class T, std::size_t NI, std::size_t NO>
constexpr std::array<std::array<T, NI>, NO> c_coefficients(const BilinearFormula& f,
                                                           const std::array<int, NI>& products,
                                                           const std::array<int, NO>& quadrants) {
  std::array<std::array<T, NI>, NO> r{};
  for (std::size_t o = 0; o < NO; ++o)
    for (std::size_t i = 0; i < NI; ++i) r[o][i] = T(f.c[products[i]][quadrants[o]]);
  return r;
}

// True when product p feeds C quadrant q alone, with coefficient `coef` (so that it can be
// computed straight into, or accumulated onto, that quadrant).
constexpr bool feeds_only(const BilinearFormula& f, int p, int q, int coef) {
  for (int t = 0; t < 4; ++t)
    if (f.c[p][t] != (t == q ? coef : 0)) return false;
  return true;
}

}  // namespace distmm
