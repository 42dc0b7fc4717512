// `winograd`: the Strassen-Winograd variant (7 products, 15 additions; seed 000's W-MM, seed 003
// Fig. 3) over BLAS, with the coefficients of strassen_formulas.hpp. Operand sums are formed in
// one fused pass per side (A11, A12, A21, A22 read once, S1..S4 written; likewise T1..T4), and
// every product that feeds several quadrants of C is folded in by one multi-output pass, the
// others by BLAS accumulating into C (beta = 1).
#pragma once
#include "engine.hpp"
#include "recursive_gemm.hpp"
#include "strassen_formulas.hpp"

namespace distmm {

struct WinogradSchedule {
  static constexpr const char* kName = "winograd";
  static constexpr int kTemps[3] = {4, 4, 3};  // S1..S4, T1..T4, Z, W and V
  static constexpr bool kSumTempsFitC = false;
  static constexpr double kPassesPerLevel = 27;  // quarter-size reads + writes, see below
  // Per-level factor on the classical error bound: Winograd's variant grows as 18^L where
  // Strassen's grows as 12^L (Higham, Accuracy and Stability, 2nd ed., Sec. 23.2.2).
  static constexpr double kErrorGrowthPerLevel = 18;

  // The top level can start on one k-half of A (PartlyReadyA): half 0 (A11, A21) feeds P1 and
  // P7 (S3 = A11 - A21) alone, half 1 (A12, A22) P2 and P4 alone, two of the seven products
  // either way, and those go first. A 1 x 2 SUMMA rank holds one half and gathers the other
  // meanwhile (docs/performance.md, "Measurements behind the code": kStartsOnHalfA).
  static constexpr bool kStartsOnHalfA = true;

  template <class T, class R>
  static void step(R& r, int depth, Operand<T> A, Operand<T> B, Target<T> C, T alpha, bool acc,
                   Temps<T>& t) {
    step_from_half(r, depth, A, B, C, alpha, acc, t, -1, [] {});
  }
  template <class T, class R, class Wait>
  static void step_pending(R& r, int depth, Operand<T> A, Operand<T> B, Target<T> C, T alpha, bool acc,
                           Temps<T>& t, int half, const Wait& wait) {
    step_from_half(r, depth, A, B, C, alpha, acc, t, half, wait);
  }

 private:
  // half < 0: all of A at hand. Otherwise the products that read k-half `half` of A alone come
  // first, then wait(), then the rest, in the same passes but for half 0's S3, which is formed
  // apart (two more quarter passes).
  template <class T, class R, class Wait>
  static void step_from_half(R& r, int depth, Operand<T> A, Operand<T> B, Target<T> C, T alpha, bool acc,
                             Temps<T>& t, int half, const Wait& wait) {
    // (named references rather than structured bindings: the products' lambdas capture them,
    // which C++17, the CUDA build's dialect, allows only for variables)
    const auto qa = quadrants(A), qb = quadrants(B);
    const auto qc = quadrants(C);
    const auto &A11 = qa[0], &A12 = qa[1], &A21 = qa[2], &A22 = qa[3];
    const auto &B11 = qb[0], &B12 = qb[1], &B21 = qb[2], &B22 = qb[3];
    const auto &C11 = qc[0], &C12 = qc[1], &C21 = qc[2], &C22 = qc[3];
    // Products 0..6 are P1..P7 of kWinogradFormula. 4 reads, 4 writes per side: S1, S2, S3, S4
    // are the A sums of P5, P6, P7, P3; T1, T2, T3, T4 the B sums of P5, P6, P7, P4.
    constexpr const BilinearFormula& F = kWinogradFormula;
    static_assert(feeds_only(F, 1, 0, 1) && feeds_only(F, 2, 1, 1) && feeds_only(F, 3, 2, -1),
                  "P2 -> C11, P3 -> C12, -P4 -> C21");
    static_assert(F.c[0][1] == F.c[5][1] && F.c[0][2] == F.c[5][2] && F.c[0][3] == F.c[5][3],
                  "P1 and P6 meet in C12, C21 and C22 alone: U2 = P1 + P6 serves all three");
    static_assert(F.a[0][1] == 0 && F.a[0][3] == 0 && F.a[6][1] == 0 && F.a[6][3] == 0 && F.a[1][0] == 0 &&
                      F.a[1][2] == 0 && F.a[3][0] == 0 && F.a[3][2] == 0,
                  "P1 and P7 read A11 and A21 alone, P2 and P4 A12 and A22 alone");
    const auto a_sums = [&] {
      r.template sums<4, 4>({A11, A12, A21, A22}, {t.a[0], t.a[1], t.a[2], t.a[3]},
                            sum_rows<T, 4>(F.a, {4, 5, 6, 2}));
    };
    if (half < 0) a_sums();
    r.template sums<4, 4>({B11, B12, B21, B22}, {t.b[0], t.b[1], t.b[2], t.b[3]},
                          sum_rows<T, 4>(F.b, {4, 5, 6, 3}));
    const auto S1 = R::temp_operand(t.a[0], A11), S2 = R::temp_operand(t.a[1], A11),
               S3 = R::temp_operand(t.a[2], A11), S4 = R::temp_operand(t.a[3], A11);
    const auto T1 = R::temp_operand(t.b[0], B11), T2 = R::temp_operand(t.b[1], B11),
               T3 = R::temp_operand(t.b[2], B11), T4 = R::temp_operand(t.b[3], B11);
    const auto Z = R::temp_target(t.c[0], C11.rows, C11.cols);
    const auto W = R::temp_target(t.c[1], C11.rows, C11.cols);
    const auto V = R::temp_target(t.c[2], C11.rows, C11.cols);
    const index_t h = C11.rows, w = C11.cols;
    const int d = depth + 1;
    const T p4_alpha = T(F.c[3][2]) * alpha;  // C21 -= P4

    // C side: 9 quarter passes overwriting C, 12 accumulating into it.
    const index_t kk = A11.cols;
    if (half == 0) {
      r.sum_of_two(qa, F.a[6], t.a[2]);  // S3
      r.independent(d, h, w, kk, [&] {
        r.multiply(d, A11, B11, Z, alpha, false);   // Z = P1
        r.multiply(d, S3, T3, W, alpha, false);     // W = P7
      });
      wait();
      r.template sums<4, 3>({A11, A12, A21, A22}, {t.a[0], t.a[1], t.a[3]}, sum_rows<T, 3>(F.a, {4, 5, 2}));
      r.multiply(d, A12, B21, C11, alpha, acc);     // C11 (+)= P2
    } else if (half == 1) {
      r.independent(d, h, w, kk, [&] {
        r.multiply(d, A12, B21, C11, alpha, acc);   // C11 (+)= P2
        r.multiply(d, A22, T4, C21, p4_alpha, acc);  // C21 (+)= -P4
      });
      wait();
      a_sums();
      r.multiply(d, A11, B11, Z, alpha, false);     // Z = P1
    } else {
      r.independent(d, h, w, kk, [&] {
        r.multiply(d, A11, B11, Z, alpha, false);   // Z = P1
        r.multiply(d, A12, B21, C11, alpha, acc);   // C11 (+)= P2
      });
    }
    r.template combine<1, 1>(h, w, {Z.in()}, {C11.out(true)},
                             c_coefficients<T, 1, 1>(F, {0}, {0}));  // C11 += P1
    r.independent(d, h, w, kk, [&] {
      r.multiply(d, S2, T2, Z, alpha, true);        // Z = U2 = P1 + P6
      if (half != 0) r.multiply(d, S3, T3, W, alpha, false);  // W = P7
      r.multiply(d, S1, T1, V, alpha, false);       // V = P5
    });
    r.template combine<3, 3>(h, w, {Z.in(), W.in(), V.in()},
                             {C12.out(acc), C21.out(acc || half == 1), C22.out(acc)},
                             c_coefficients<T, 3, 3>(F, {0, 6, 4}, {1, 2, 3}));
    r.independent(d, h, w, kk, [&] {
      r.multiply(d, S4, B22, C12, alpha, true);     // C12 += P3
      if (half != 1) r.multiply(d, A22, T4, C21, p4_alpha, true);  // C21 -= P4
    });
  }
};

EngineInfo winograd_engine_info();

}  // namespace distmm
