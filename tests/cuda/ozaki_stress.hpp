// The stress inputs of the INT8 emulation's accuracy rule (ozaki_accuracy_test.cpp on the host
// twin, int8_emulation_test.cpp on the GPU) and their exact products: wide exponent ranges,
// small entries meeting large ones, the bound's worst case, rows and columns of very different
// norms, cancellation, aligned rounding (f64), seed 003's matrices, uniform.
#pragma once
#include <cmath>
#include <complex>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "src/core/dtype.hpp"
#include "cuda/ozaki_arith.hpp"
#include "src/core/types.hpp"

namespace distmm::stress {

using Q = __float128;

// Column-major n x n (or m x k) matrices and their exact product's parts.
template <class T>
struct Problem {
  std::string name;
  index_t m = 0, n = 0, k = 0;
  std::vector<T> A, B;
};

template <class T>
T make(double re, double im) {
  if constexpr (is_complex_v<T>) return T(real_t<T>(re), real_t<T>(im));
  else return T(re);
}

// The problem's A and B stored as op(A) = A and op(B) = B read them: transposed for T, also
// conjugated for C (leading dimensions k and n where transposed).
template <class T>
std::pair<std::vector<T>, std::vector<T>> stored_as(const Problem<T>& p, Op ta, Op tb) {
  auto conj_if = [](T x, Op op) {
    if constexpr (is_complex_v<T>) return op == Op::C ? std::conj(x) : x;
    else return x;
  };
  std::vector<T> A = p.A, B = p.B;
  if (ta != Op::N)
    for (index_t h = 0; h < p.k; ++h)
      for (index_t i = 0; i < p.m; ++i) A[h + i * p.k] = conj_if(p.A[i + h * p.m], ta);
  if (tb != Op::N)
    for (index_t j = 0; j < p.n; ++j)
      for (index_t h = 0; h < p.k; ++h) B[j + h * p.n] = conj_if(p.B[h + j * p.k], tb);
  return {std::move(A), std::move(B)};
}

// The stress inputs for one shape.
template <class T>
std::vector<Problem<T>> problems(index_t m, index_t n, index_t k, unsigned seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> U(-1, 1);
  auto uni = [&] { return make<T>(U(g), U(g)); };
  std::vector<Problem<T>> out;
  auto add = [&](std::string name, auto fa, auto fb) {
    Problem<T> p{std::move(name), m, n, k, std::vector<T>(m * k), std::vector<T>(k * n)};
    for (index_t h = 0; h < k; ++h)
      for (index_t i = 0; i < m; ++i) p.A[i + h * m] = fa(i, h);
    for (index_t j = 0; j < n; ++j)
      for (index_t h = 0; h < k; ++h) p.B[h + j * k] = fb(h, j);
    out.push_back(std::move(p));
  };
  add("uniform", [&](index_t, index_t) { return uni(); }, [&](index_t, index_t) { return uni(); });
  for (int range : {4, 12, 24}) {  // each entry times 2^s, s uniform in [-range, range]
    auto wide = [&](index_t, index_t) {
      return uni() * real_t<T>(std::ldexp(1.0, int(g() % (2 * range + 1)) - range));
    };
    add("wide-range " + std::to_string(range), wide, wide);
  }
  // A's column h times 2^-s_h, B's row h times 2^s_h, s_h up to 24: every term of (|A||B|)_ij
  // about the same size, while each row of A (column of B) spans 24 binades, so that the
  // truncation of the small entries is as large relative to |A||B| as the rule allows for.
  auto s_of = [](index_t h) { return int((h * 7) % 25); };
  add("aligned spread", [&](index_t, index_t h) { return uni() * real_t<T>(std::ldexp(1.0, -s_of(h))); },
      [&](index_t h, index_t) { return uni() * real_t<T>(std::ldexp(1.0, s_of(h))); });
  // The worst case of the bound: each entry of AB is one small entry of A (a row's smallest,
  // 2^-4 to 2^-3 below its largest), picked out by a column of B with a single 1.
  if (k >= 2)
    add("one-hot", [&](index_t, index_t h) { return h == 0 ? T(1) : (T(1) + uni() * real_t<T>(0.5)) * real_t<T>(0x1p-4); },
        [&](index_t h, index_t j) { return T(h == 1 + j % (k - 1)); });
  add("row and column norms 2^+-30", [&](index_t i, index_t) { return uni() * real_t<T>(std::ldexp(1.0, int(i % 61) - 30)); },
      [&](index_t, index_t j) { return uni() * real_t<T>(std::ldexp(1.0, 30 - int(j % 61))); });
  // A = [Y, Y (1 + 2^-12 r)], B = [X; -X]: AB is about 2^-12 |A||B|.
  {
    std::vector<T> Y(m * k), X(k * n), D(m * k);
    for (auto& y : Y) y = uni();
    for (auto& x : X) x = uni();
    for (auto& d : D) d = uni();
    const index_t h2 = k / 2;
    add("cancellation", [&](index_t i, index_t h) {
          return h < h2 ? Y[i + h * m] : Y[i + (h - h2) * m] * (real_t<T>(1) + real_t<T>(0x1p-12) * std::real(D[i + h * m]));
        },
        [&](index_t h, index_t j) { return h < h2 ? X[h + j * k] : h - h2 < h2 ? -X[h - h2 + j * k] : T(0); });
  }
  // f64: every entry of A a half-integer short of 2^-5 at the scale that 13 moduli give it, B small
  // positive integers (exact at any scale): with 13 moduli every truncation of A has the same
  // sign and size, about 3 times the native target sqrt(K) u |A||B|; the rule's 14 round them
  // finely enough.
  if constexpr (std::is_same_v<T, double>) {
    const double c = std::floor(0.75 * ozaki::scale_bound(13, k) / std::sqrt(double(k)));
    add("aligned rounding", [&](index_t i, index_t) { return c - double(i) + 0.46875; },
        [&](index_t h, index_t j) { return double(1 + (h + j) % 3); });
  }
  if (m == k && n == k) {  // seed 003's matrices (accuracy_command.cpp)
    std::vector<long double> u(k), v(k);
    long double vtu = 0;
    for (index_t i = 0; i < k; ++i) {
      u[i] = 1.0L / static_cast<long double>(k - i);
      v[i] = std::sqrt(static_cast<long double>(i + 1));
      vtu += u[i] * v[i];
    }
    add("seed 003 identity", [&](index_t i, index_t h) { return make<T>(double((i == h) + u[i] * v[h]), 0); },
        [&](index_t h, index_t j) { return make<T>(double((h == j) - u[h] * v[j] / (1 + vtu)), 0); });
  }
  return out;
}

inline double part(const double& x, int) { return x; }
inline double part(const float& x, int) { return x; }
template <class R>
double part(const std::complex<R>& x, int p) {
  return p == 0 ? x.real() : x.imag();
}

// Per entry and real component: the exact product's component and (|A||B|) (real-embedded for
// complex: Re P = sum ar br - ai bi, its |A||B| sum |ar||br| + |ai||bi|).
template <class T>
struct Exact {
  std::vector<Q> P, AB;  // [(i + j m) * parts + p]
};
template <class T>
Exact<T> exact(const Problem<T>& p) {
  constexpr int parts = is_complex_v<T> ? 2 : 1;
  Exact<T> e;
  e.P.assign(p.m * p.n * parts, 0), e.AB.assign(p.m * p.n * parts, 0);
  for (index_t j = 0; j < p.n; ++j)
    for (index_t h = 0; h < p.k; ++h) {
      const T b = p.B[h + j * p.k];
      const Q br = part(b, 0), bi = parts == 2 ? Q(part(b, 1)) : Q(0);
      for (index_t i = 0; i < p.m; ++i) {
        const T a = p.A[i + h * p.m];
        const Q ar = part(a, 0), ai = parts == 2 ? Q(part(a, 1)) : Q(0);
        Q* P = &e.P[(i + j * p.m) * parts];
        Q* AB = &e.AB[(i + j * p.m) * parts];
        auto fabsq = [](Q x) { return x < 0 ? -x : x; };
        P[0] += ar * br - ai * bi;
        AB[0] += fabsq(ar) * fabsq(br) + fabsq(ai) * fabsq(bi);
        if (parts == 2) {
          P[1] += ar * bi + ai * br;
          AB[1] += fabsq(ar) * fabsq(bi) + fabsq(ai) * fabsq(br);
        }
      }
    }
  return e;
}

// The largest |C - P|_ij / (|A||B|)_ij over entries and components (entries with |A||B| = 0
// must be exact: +inf otherwise).
template <class T>
double worst_ratio(const std::vector<T>& C, const Exact<T>& e) {
  constexpr int parts = is_complex_v<T> ? 2 : 1;
  double worst = 0;
  for (std::size_t t = 0; t < C.size(); ++t)
    for (int p = 0; p < parts; ++p) {
      Q d = Q(part(C[t], p)) - e.P[t * parts + p];
      if (d < 0) d = -d;
      const Q ab = e.AB[t * parts + p];
      if (d == 0) continue;
      worst = std::fmax(worst, ab == 0 ? INFINITY : double(d / ab));
    }
  return worst;
}

}  // namespace distmm::stress
