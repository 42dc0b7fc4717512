// `strassen`: Strassen's algorithm (7 products, 18 additions; seed 000's S-MM) over BLAS, with
// the coefficients of strassen_formulas.hpp. All five sums of A quadrants come from one fused
// pass (X1..X5), likewise for B (Y1..Y5); the products that feed several quadrants of C go
// through Z and W and one multi-output pass each.
#pragma once
#include "engine.hpp"
#include "recursive_gemm.hpp"
#include "strassen_formulas.hpp"

namespace distmm {

struct StrassenSchedule {
  static constexpr const char* kName = "strassen";
  static constexpr int kTemps[3] = {5, 5, 2};
  static constexpr bool kSumTempsFitC = false;
  static constexpr double kPassesPerLevel = 37;
  // Per-level factor on the classical error bound (Higham, Accuracy and Stability, 2nd ed., Thm. 23.3).
  static constexpr double kErrorGrowthPerLevel = 12;

  template <class T, class R>
  static void step(R& r, int depth, Operand<T> A, Operand<T> B, Target<T> C, T alpha, bool acc,
                   Temps<T>& t) {
    // (named references rather than structured bindings: the products' lambdas capture them,
    // which C++17, the CUDA build's dialect, allows only for variables)
    const auto qa = quadrants(A), qb = quadrants(B);
    const auto qc = quadrants(C);
    const auto &A11 = qa[0], &A12 = qa[1], &A21 = qa[2], &A22 = qa[3];
    const auto &B11 = qb[0], &B12 = qb[1], &B21 = qb[2], &B22 = qb[3];
    const auto &C11 = qc[0], &C12 = qc[1], &C21 = qc[2], &C22 = qc[3];
    // Products 0..6 are M1..M7 of kStrassenFormula. X0..X4: the A sums of M1, M2, M5, M6, M7;
    // Y0..Y4: the B sums of M1, M3, M4, M6, M7 (M4's A side is A22, M2's B side B11, ...).
    constexpr const BilinearFormula& F = kStrassenFormula;
    static_assert(feeds_only(F, 5, 3, 1) && feeds_only(F, 6, 0, 1), "M6 -> C22, M7 -> C11");
    r.template sums<4, 5>({A11, A12, A21, A22}, {t.a[0], t.a[1], t.a[2], t.a[3], t.a[4]},
                          sum_rows<T, 5>(F.a, {0, 1, 4, 5, 6}));
    r.template sums<4, 5>({B11, B12, B21, B22}, {t.b[0], t.b[1], t.b[2], t.b[3], t.b[4]},
                          sum_rows<T, 5>(F.b, {0, 2, 3, 5, 6}));
    auto X = [&](int i) { return R::temp_operand(t.a[i], A11); };
    auto Y = [&](int i) { return R::temp_operand(t.b[i], B11); };
    const auto Z = R::temp_target(t.c[0], C11.rows, C11.cols);
    const auto W = R::temp_target(t.c[1], C11.rows, C11.cols);
    const index_t h = C11.rows, w = C11.cols;
    const int d = depth + 1;

    const index_t kk = A11.cols;
    r.independent(d, h, w, kk, [&] {
      r.multiply(d, X(3), Y(3), C22, alpha, acc);  // C22 (+)= M6
      r.multiply(d, X(4), Y(4), C11, alpha, acc);  // C11 (+)= M7
      r.multiply(d, X(0), Y(0), Z, alpha, false);  // Z = M1
      r.multiply(d, A22, Y(2), W, alpha, false);   // W = M4
    });
    r.template combine<2, 2>(h, w, {Z.in(), W.in()}, {C11.out(true), C22.out(true)},
                             c_coefficients<T, 2, 2>(F, {0, 3}, {0, 3}));
    r.multiply(d, X(1), B11, Z, alpha, false);   // Z = M2
    r.template combine<2, 2>(h, w, {Z.in(), W.in()}, {C21.out(acc), C22.out(true)},
                             c_coefficients<T, 2, 2>(F, {1, 3}, {2, 3}));
    r.independent(d, h, w, kk, [&] {
      r.multiply(d, A11, Y(1), Z, alpha, false);   // Z = M3
      r.multiply(d, X(2), B22, W, alpha, false);   // W = M5
    });
    r.template combine<2, 3>(h, w, {Z.in(), W.in()}, {C12.out(acc), C22.out(true), C11.out(true)},
                             c_coefficients<T, 2, 3>(F, {2, 4}, {1, 3, 0}));
  }
};

EngineInfo strassen_engine_info();

}  // namespace distmm
