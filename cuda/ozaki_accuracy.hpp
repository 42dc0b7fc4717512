// The accuracy rule of the INT8 Ozaki-II emulation (int8_emulation.hpp, and its host twin
// ozaki_host.hpp): from an accuracy target and the operands' statistics, the moduli count N and
// a rigorous entrywise bound of the emulation's error. Plain C++, host only; the derivation is
// in docs/accuracy.md.
//
// Notation: P = op(A) op(B), |P| <= |A||B| entrywise, u_out the unit roundoff of the output,
// for row i of op(A) (column j of op(B) alike) its scaling exponent e_i, its smallest nonzero
// entry's binary exponent E_i = floor(log2 min |a_ih|), and d_i = log2 ||a_i||_2 - E_i its
// "spread" (how far the smallest entry sits below the norm the scaling comes from).
//   Truncation: a'_ih = round(2^e_i a_ih) = 2^e_i a_ih (1 + t_ih), |t_ih| <= rho_i with
//     rho_i = 0 where E_i + e_i >= p - 1 (every entry's last bit is at or above 2^0; p the
//     input's precision), else min(1, 2^-(E_i + e_i + 1)) (|a' - 2^e a| <= min(1/2, |2^e a|)).
//   CRT: exact (|a'_i . b'_j| <= ||a'_i|| ||b'_j|| < M / 2, scale_bound in ozaki_arith.hpp).
//   Conversion: correctly rounded to double (ozaki::to_double), the power of two exact, one more
//     rounding to f32 outputs: u_out = 2^-53 (f64), 2^-24 + 2^-53 + 2^-77 (f32).
// So |C_ij - P_ij| <= c (|A||B|)_ij, c = (1 + rho_A)(1 + rho_B)(1 + u_out) - 1 with rho_A,
// rho_B the largest over rows and columns (no underflow, as for the native routine's bound).
// Since the scaling e_i is the largest with 2^e_i ||a_i|| <= T', E_i + e_i >= floor(log2 T' -
// 1 - d_i) + 1, so the rule needs only T' (from N) and the largest spread of each operand.
//
// A second, usually much tighter bound reads the operands' own |A||B| (ProductStats): with
// |a'_ih - 2^e_i a_ih| <= 1/2 and 2^-(e_i + 1) < ||a_i||_2 / T' (e_i the largest with
// 2^e_i ||a_i||_2 <= T'),
//   |C_ij - P_ij| <= (||a_i||_2 ||b_j||_1 + ||b_j||_2 ||a_i||_1) / T' + kk ||a_i||_2 ||b_j||_2 / T'^2
// before the output's rounding, and dividing by a lower bound L_ij <= (|A||B|)_ij (one INT8
// product of the operands' magnitudes floored to 7 bits, exact in int32) gives
// c <= X / T' + Y / T'^2 (+ the output's rounding), X and Y the largest ratios over i, j. It
// does not see the smallest entries (their truncation weighs as little as they do), so for
// uniform inputs it needs about half the bits the spread's bound needs. It costs one INT8
// product and is computed only where it can lower N (choose_with_product).
//
// Targets: native: c <= sqrt(K) u, u the native routine's unit roundoff and K the terms of each
// real inner product (k, 2k for complex): the emulation's guaranteed error is then no larger
// than the native routine's typical one (Higham and Mary, SIAM J. Sci. Comput. 41(5), 2019: with
// independent rounding errors |C - AB| <= lambda sqrt(K) u |A||B| with high probability), and
// sqrt(K) times below the bound every native GEMM meets in any summation order,
// gamma_K = K u / (1 - K u) (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed.,
// eq. 3.13). A target at gamma_K alone would let the measured error exceed the native one's
// by two orders of magnitude (docs/accuracy.md). relative eps: c <= eps. max: today's rule
// (required_bits), with its c reported but not targeted.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "../src/core/types.hpp"
#include "ozaki_arith.hpp"

namespace distmm::ozaki {

struct Accuracy {
  enum Kind { native, relative, max };
  Kind kind = native;
  double eps = 0;  // relative: the entrywise bound relative to |A||B|
};

// "native", "max" or a relative error in (0, 1) such as 1e-10; "" when `text` parses, else the
// one-line reason, naming the option as `option` (the CLI's "--accuracy ", the C API's
// "accuracy=").
inline std::string parse_accuracy(const std::string& text, Accuracy& out, const std::string& option = "--accuracy ") {
  if (text == "native") return out = {Accuracy::native, 0}, "";
  if (text == "max") return out = {Accuracy::max, 0}, "";
  char* end = nullptr;
  const double eps = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(eps > 0 && eps < 1))
    return option + (text.empty() ? "''" : text) + ": use native, max or a relative error in (0, 1) such as 1e-10";
  out = {Accuracy::relative, eps};
  return "";
}
// An engine's target (EngineOptions::accuracy, checked where the options are taken: a bad one
// here is a UsageError naming the fix) and its name in the report, or how N was forced.
inline Accuracy accuracy_or_throw(const std::string& text) {
  Accuracy a;
  if (std::string why = parse_accuracy(text, a); !why.empty()) throw UsageError(why);
  return a;
}
inline std::string accuracy_label(const std::string& text, int forced_moduli) {
  return forced_moduli > 0 ? "forced (--moduli " + std::to_string(forced_moduli) + ")" : text;
}
inline std::string accuracy_name(const Accuracy& a) {
  if (a.kind == Accuracy::native) return "native";
  if (a.kind == Accuracy::max) return "max";
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", a.eps);
  return b;
}

// The statistic of one operand the rule reads: the largest spread d_i (log2 ||x||_2 - floor
// log2 of the smallest nonzero |x_h|) and the largest mean deficit (log2 ||x||_2 - the mean of
// floor log2 |x_h|, today's rule) over its rows (op(A)) or columns (op(B)).
struct Spread {
  double min_deficit = 0;
  double mean_deficit = 0;
};
// The computed norms and logarithms may be off by a few units in their last place; the spread
// is taken this much larger.
constexpr double kSpreadMargin = 1.0 / 64;

// The unit roundoffs: of the inputs' and the native routine's precision, and of the output
// (the correctly rounded double, then for single precision one more rounding).
inline double unit_roundoff(bool single) { return single ? 0x1p-24 : 0x1p-53; }
inline double output_roundoff(bool single) { return single ? 0x1p-24 + 0x1p-53 + 0x1p-77 : 0x1p-53; }
inline int precision(bool single) { return single ? 24 : 53; }

// gamma_K = K u / (1 - K u) (infinite where K u >= 1).
inline double gamma(long long K, double u) {
  const double ku = double(K) * u;
  return ku < 1 ? ku / (1 - ku) * (1 + 0x1p-50) : INFINITY;
}

// rho for one operand: the largest relative truncation of its entries at scale bound T'.
inline double truncation(double Tp, double spread, bool single) {
  const double x = std::floor(std::log2(Tp) - 1 - (spread + kSpreadMargin));  // E_i + e_i >= x + 1
  if (x + 1 >= precision(single) - 1) return 0;
  return std::fmin(1.0, std::exp2(-(x + 2)));
}

// The entrywise bound c (relative to |A||B|) of the emulation with N moduli, for rows of kk
// stacked entries (k, or 2k for complex).
inline double entrywise_bound(int N, long long kk, const Spread& a, const Spread& b, bool single) {
  const double Tp = scale_bound(N, kk);
  if (!(Tp >= 1)) return INFINITY;
  const double ra = truncation(Tp, a.min_deficit, single), rb = truncation(Tp, b.min_deficit, single);
  const double u = output_roundoff(single);
  return (ra + rb + ra * rb + u * (1 + ra) * (1 + rb)) * (1 + 0x1p-50);
}

// The |A||B|-aware statistics: X, Y as above; not computed: infinite.
struct ProductStats {
  double X = INFINITY, Y = INFINITY;
};
// The computed norms carry relative errors near kk 2^-53; the ratios are taken this much larger.
constexpr double kProductMargin = 1 + 0x1p-20;

inline double product_bound(int N, long long kk, const ProductStats& p, bool single) {
  const double Tp = scale_bound(N, kk);
  if (!(Tp >= 1) || !std::isfinite(p.X) || !std::isfinite(p.Y)) return INFINITY;
  const double t = kProductMargin * (p.X / Tp + p.Y / (Tp * Tp));
  return (t + output_roundoff(single) * (1 + t)) * (1 + 0x1p-50);
}

// The native routine's typical error, sqrt(K) u (see the header).
inline double native_target(long long kk, bool single) { return std::sqrt(double(kk)) * unit_roundoff(single); }

// The rule's answer for one product.
struct Choice {
  int N = 0;            // moduli; 0: no N <= kMaxModuli meets the target (run natively)
  double bound = 0;     // c: |C - P| <= c (|A||B|) entrywise (per real component for complex)
  double target = 0;    // what c had to meet (native: sqrt(K) u; max: none, 0)
  const char* scaling = "fast";  // row and column powers of two from their 2-norms (Cauchy-Schwarz)
  bool from_product = false;     // the bound is the |A||B|-aware one
  bool paired = false;           // ... from rows and columns in pairs (choose_with_product)
  std::string why;      // when N = 0
};

// N and the bound for target `acc`; `forced` > 0 fixes N (--moduli) and reports its bound;
// levels_above: the product is a leaf under that many Strassen-like levels (only `max` reads it:
// the other targets hold per product); `prod`: the |A||B|-aware statistics where computed.
inline Choice choose(const Accuracy& acc, bool single, const Spread& a, const Spread& b, long long kk,
                     int levels_above = 0, int forced = 0, const ProductStats& prod = {}) {
  Choice c;
  auto bound_of = [&](int N) {
    const double spread = entrywise_bound(N, kk, a, b, single), product = product_bound(N, kk, prod, single);
    c.from_product = product < spread;
    return std::fmin(spread, product);
  };
  if (forced > 0 || acc.kind == Accuracy::max) {
    c.N = forced > 0 ? forced
                     : fewest_moduli(required_bits(single, std::fmax(a.mean_deficit, b.mean_deficit), levels_above), kk);
    if (c.N == 0) {
      char why[160];
      const double need = required_bits(single, std::fmax(a.mean_deficit, b.mean_deficit), levels_above);
      std::snprintf(why, sizeof why, "exponent range too wide: %.0f bits needed, %d moduli give %.0f", need,
                    kMaxModuli, std::log2(scale_bound(kMaxModuli, kk)));
      c.why = why;
      return c;
    }
    c.bound = bound_of(c.N);
    return c;
  }
  c.target = acc.kind == Accuracy::native ? native_target(kk, single) : acc.eps;
  for (int N = 2; N <= kMaxModuli; ++N) {
    const double bound = bound_of(N);
    if (bound <= c.target) {
      c.N = N, c.bound = bound;
      return c;
    }
  }
  c.from_product = false;
  char why[200];
  std::snprintf(why, sizeof why,
                "accuracy %s out of reach: spreads of %.0f and %.0f bits leave %.2g with %d moduli, above %.2g",
                accuracy_name(acc).c_str(), a.min_deficit, b.min_deficit, bound_of(kMaxModuli), kMaxModuli,
                c.target);
  c.why = why;
  return c;
}

// choose() with the |A||B|-aware statistics computed (`product(paired)`) only where they can
// lower N, the same decisions on the GPU and the host twin: `x_lower` = max_i ||a_i||_2 /
// ||a_i||_inf + max_j ||b_j||_2 / ||b_j||_inf is a lower bound of X ((|A||B|)_ij <= ||a_i||_inf
// ||b_j||_1 and <= ||a_i||_1 ||b_j||_inf), so the N it allows is the fewest the product could give.
// paired: rows of op(A) and columns of op(B) taken in pairs, each pair's smaller magnitude (a
// quarter of the product's work, a lower bound still, X about 2.25 times larger on uniform
// magnitudes); asked for first where kPairedSlack x_lower still allows that fewest N (at native
// accuracy f32's margin to the next modulus is about 4x the whole product's X, 8x x_lower;
// f64's about 1.2x: f64 takes the whole product). Where the pairs fall short of that N (rows of
// a pair with very different norms, short k), the whole product follows: it costs one product
// and may save several moduli.
constexpr double kPairedSlack = 6;
template <class Product>
Choice choose_with_product(const Accuracy& acc, bool single, const Spread& a, const Spread& b, long long kk,
                           int levels_above, int forced, double x_lower, Product&& product) {
  Choice c = choose(acc, single, a, b, kk, levels_above, forced);
  if (forced > 0 || acc.kind == Accuracy::max || !std::isfinite(x_lower)) return c;
  const Spread none{INFINITY, 0};
  const int least = choose(acc, single, none, none, kk, 0, 0, {x_lower, 0}).N;
  if (least == 0 || (c.N > 0 && c.N <= least)) return c;
  if (choose(acc, single, none, none, kk, 0, 0, {kPairedSlack * x_lower, 0}).N == least) {
    Choice p = choose(acc, single, a, b, kk, levels_above, forced, product(true));
    p.paired = p.from_product;
    if (p.N > 0 && (c.N == 0 || p.N < c.N)) c = p;
    if (c.N > 0 && c.N <= least) return c;
  }
  // (a tie with the pairs goes to the whole product: its statistics are the last computed)
  const Choice w = choose(acc, single, a, b, kk, levels_above, forced, product(false));
  return w.N > 0 && (c.N == 0 || w.N < c.N || (w.N == c.N && c.paired)) ? w : c;
}

// DISTMM_EMULATION_LEVEL's value (auto, 0, 1 or 2; checked where it is read, src/core/settings.cpp)
// as the mode of residue_level and residue_levels.
inline LevelMode level_mode(const std::string& setting) {
  return setting == "0"   ? LevelMode::never
         : setting == "1" ? LevelMode::forced
         : setting == "2" ? LevelMode::forced_two
                          : LevelMode::automatic;
}

// What an emulation's calls so far did, for describe() and the report (the GPU's and the host
// twin's): "accuracy native, 7 moduli, fast scaling, bound 8.2e-07 |A||B| (target 3.3e-06),
// 3 products, 2 bounded from their |A||B| (1 run natively: NaN or Inf among the operands)".
struct Tally {
  long long calls = 0;      // products emulated
  long long fallbacks = 0;  // products declined (run natively)
  int min_moduli = 0, max_moduli = 0;
  double max_bound = 0;       // the largest entrywise bound c (|C - AB| <= c |A||B|) of the calls
  double target = 0;          // what c had to meet (0: none, accuracy max or forced moduli)
  const char* scaling = "";   // the scaling mode the rule chose
  long long product_calls = 0;  // products whose bound read the operands' |A||B|
  long long paired_calls = 0;   // ... of them in pairs of rows and columns
  long long reused_a = 0;       // products that took op(A)'s slices from the call before
  long long residue_levels = 0;  // products that ran a Winograd level in the residues (exact)
  long long two_levels = 0;      // ... of them two levels
  std::string last_fallback;  // why the last declined product was declined

  // One emulated product (or k-chunk) with the rule's choice.
  void chose(const Choice& c) {
    min_moduli = min_moduli ? std::min(min_moduli, c.N) : c.N;
    max_moduli = std::max(max_moduli, c.N);
    max_bound = std::fmax(max_bound, c.bound);
    target = c.target, scaling = c.scaling;
    product_calls += c.from_product;
    paired_calls += c.paired;
  }
  void declined(std::string why) {
    ++fallbacks;
    last_fallback = std::move(why);
  }
  // `accuracy`: the target's name, or how N was forced.
  std::string text(const std::string& accuracy) const {
    std::string t = "accuracy " + accuracy + ", ";
    if (calls == 0) t += "no product emulated yet";
    else {
      char b[96];
      std::snprintf(b, sizeof b, ", %s scaling, bound %.2e |A||B|", scaling, max_bound);
      t += (min_moduli == max_moduli ? std::to_string(max_moduli)
                                     : std::to_string(min_moduli) + "-" + std::to_string(max_moduli)) +
           " moduli" + b;
      if (target > 0) {
        std::snprintf(b, sizeof b, " (target %.2e)", target);
        t += b;
      }
      t += ", " + std::to_string(calls) + " products";
      if (product_calls > 0) {
        t += ", " + std::to_string(product_calls) + " bounded from their |A||B|";
        if (paired_calls > 0) t += " (" + std::to_string(paired_calls) + " in pairs of rows and columns)";
      }
      if (reused_a > 0) t += ", " + std::to_string(reused_a) + " on op(A)'s slices of the product before";
      if (residue_levels > 0)
        t += ", " + std::to_string(residue_levels) + " with an exact Winograd level in the residues" +
             (two_levels > 0 ? " (" + std::to_string(two_levels) + " with two)" : std::string());
    }
    if (fallbacks) t += " (" + std::to_string(fallbacks) + " run natively: " + last_fallback + ")";
    return t;
  }
};

}  // namespace distmm::ozaki
