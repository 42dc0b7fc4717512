// `strassen-lowmem`: Strassen's algorithm with two temporaries per level (the bound of Bailey's
// schedule, seed 003 Fig. 2, and seed 000's R-S-MM), accumulating into C. X holds an A sum or a
// C-size product, Y a B sum or a C-size product. The same schedule serves C = AB and C += AB:
// C22 is first turned into C22 - C11 while C11 holds the terms C22 does not share (M7, M4, -M5),
// so that M1, shared by both, is added to C11 alone and reaches C22 through C22 += C11 (in 7).
//   1. C11 (+)= M7                  X = A12 - A22, Y = B21 + B22
//   2. X = M4: C21 (+)= X, C11 += X  Y = B21 - B11   (C = AB: M4 straight into C21)
//   3. Y = M5: C12 (+)= Y, C11 -= Y  X = A11 + A12   (C = AB: M5 straight into C12)
//   4. C22 = [C22] - C11
//   5. C11 += M1                    X = A11 + A22, Y = B11 + B22
//   6. Y = M2: C21 += Y, C22 -= Y    X = A21 + A22
//   7. X = M3: C12 += X, C22 += X + C11   Y = B12 - B22   (C11 is final after 5)
//   8. C22 += M6                    X = A21 - A11, Y = B11 + B12
#pragma once
#include "engine.hpp"
#include "recursive_gemm.hpp"
#include "strassen_formulas.hpp"

namespace distmm {

struct StrassenLowmemSchedule {
  static constexpr const char* kName = "strassen-lowmem";
  static constexpr int kTemps[3] = {1, 1, 0};
  static constexpr bool kSumTempsFitC = true;  // X and Y also hold C-size products
  static constexpr double kPassesPerLevel = 54;
  // Per-level factor on the classical error bound (Higham, Accuracy and Stability, 2nd ed., Thm. 23.3).
  static constexpr double kErrorGrowthPerLevel = 12;

  template <class T, class R>
  static void step(R& r, int depth, Operand<T> A, Operand<T> B, Target<T> C, T alpha, bool acc,
                   Temps<T>& t) {
    const auto [A11, A12, A21, A22] = quadrants(A);
    const auto [B11, B12, B21, B22] = quadrants(B);
    const auto [C11, C12, C21, C22] = quadrants(C);
    const index_t h = C11.rows, w = C11.cols;
    const int d = depth + 1;
    const auto X = R::temp_operand(t.a[0], A11), Y = R::temp_operand(t.b[0], B11);
    const auto XC = R::temp_target(t.a[0], h, w), YC = R::temp_target(t.b[0], h, w);
    // Each sum has two terms: row p of kStrassenFormula's a- or b-table (M1..M7 = 0..6).
    constexpr const BilinearFormula& F = kStrassenFormula;
    const std::array<Operand<T>, 4> qa{A11, A12, A21, A22}, qb{B11, B12, B21, B22};
    auto sumA = [&](int p) { r.sum_of_two(qa, F.a[p], t.a[0]); };
    auto sumB = [&](int p) { r.sum_of_two(qb, F.b[p], t.b[0]); };

    sumA(6), sumB(6);
    r.multiply(d, X, Y, C11, alpha, acc);  // 1
    sumB(3);
    if (acc) {
      r.multiply(d, A22, Y, XC, alpha, false);  // 2
      r.template combine<1, 2>(h, w, {XC.in()}, {C21.out(true), C11.out(true)}, {{{1}, {1}}});
    } else {  // C21 is free: M4 goes there, one pass less
      r.multiply(d, A22, Y, C21, alpha, false);  // 2
      r.template combine<1, 1>(h, w, {C21.in()}, {C11.out(true)}, {{{1}}});
    }
    sumA(4);
    if (acc) {
      r.multiply(d, X, B22, YC, alpha, false);  // 3
      r.template combine<1, 2>(h, w, {YC.in()}, {C12.out(true), C11.out(true)}, {{{1}, {-1}}});
    } else {
      r.multiply(d, X, B22, C12, alpha, false);  // 3
      r.template combine<1, 1>(h, w, {C12.in()}, {C11.out(true)}, {{{-1}}});
    }
    r.template combine<1, 1>(h, w, {C11.in()}, {C22.out(acc)}, {{{-1}}});  // 4
    sumA(0), sumB(0);
    r.multiply(d, X, Y, C11, alpha, true);  // 5
    sumA(1);
    r.multiply(d, X, B11, YC, alpha, false);  // 6
    r.template combine<1, 2>(h, w, {YC.in()}, {C21.out(true), C22.out(true)}, {{{1}, {-1}}});
    sumB(2);
    r.multiply(d, A11, Y, XC, alpha, false);  // 7
    // C22's share of C11 rides on this pass (C11 is final since 5): one pass less than a
    // separate C22 += C11 at the end.
    r.template combine<2, 2>(h, w, {XC.in(), C11.in()}, {C12.out(true), C22.out(true)},
                             {{{1, 0}, {1, 1}}});
    sumA(5), sumB(5);
    r.multiply(d, X, Y, C22, alpha, true);  // 8
  }
};

EngineInfo strassen_lowmem_engine_info();

}  // namespace distmm
