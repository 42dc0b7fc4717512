// The INT8 Ozaki-II emulation on the host (the GPU's int8_emulation.cu step by step, with the
// same shared rule and arithmetic: ozaki_accuracy.hpp, ozaki_arith.hpp), for tests, CI and the
// host engine `ozaki`: statistics per row of op(A) and column of op(B); N from the accuracy
// target; scaling exponents; the scaled, rounded integers' int8 residues per modulus; exact
// integer products (int32 sums of int8 products, as the INT8 GEMM forms them; where
// residue_level allows, through one Winograd level in the residues as the GPU takes it); the
// fold; the CRT in 128-bit integers; the power-of-two unscaling and C = alpha P + beta C in double.
// O(N m n k) integer operations: small products only.
#pragma once
#include <algorithm>
#include <climits>
#include <cmath>
#include <complex>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../src/core/dtype.hpp"
#include "../src/core/types.hpp"
#include "ozaki_accuracy.hpp"
#include "ozaki_arith.hpp"

namespace distmm::ozaki {

// What one host product did: N, the rule's choice, or why it was declined (C untouched).
struct HostResult {
  Choice choice;
  ProductStats product;  // the last |A||B|-aware statistics computed (none: infinite)
  bool residue_level = false;  // the products ran one Winograd level in the residues
  bool emulated() const { return choice.N > 0 && choice.why.empty(); }
};

namespace host_detail {

template <class T>
double part(const T& x, int p) {
  if constexpr (is_complex_v<T>) return double(p == 0 ? x.real() : x.imag());
  else return double(x);
}

// The statistics of one row of op(A) or column of op(B) (outer_stats): the largest |entry|'s
// exponent E, s = ||x||_2 2^-E, the mean and the smallest exponent of the nonzero entries.
struct Outer {
  double s = 0, l1 = 0, mx = 0;  // ||x||_2, ||x||_1 and ||x||_inf, times 2^-E
  int E = 0;
  bool bad = false;
  float deficit = 0, spread = 0;  // float, as the GPU keeps them
};
template <class Get>
Outer outer(index_t K, int parts, Get&& get) {
  Outer o;
  double mx = 0;
  long long logsum = 0;
  int nnz = 0, emin = INT_MAX;
  for (index_t h = 0; h < K; ++h)
    for (int p = 0; p < parts; ++p) {
      const double a = std::fabs(get(h, p));
      if (!std::isfinite(a)) o.bad = true;
      else if (a != 0) mx = std::fmax(mx, a), logsum += std::ilogb(a), ++nnz, emin = std::min(emin, std::ilogb(a));
    }
  o.E = mx > 0 ? std::ilogb(mx) : 0;
  double sum = 0;
  for (index_t h = 0; h < K; ++h)
    for (int p = 0; p < parts; ++p) {
      const double a = std::ldexp(get(h, p), -o.E);
      if (std::isfinite(a)) sum += a * a, o.l1 += std::fabs(a), o.mx = std::fmax(o.mx, std::fabs(a));
    }
  o.s = std::sqrt(sum);
  if (nnz > 0) {
    o.deficit = std::fmax(float(std::log2(o.s) + o.E - double(logsum) / nnz), 0.f);
    o.spread = std::fmax(float(std::log2(o.s) + o.E - emin), 0.f);
  }
  return o;
}

template <std::size_t... L>
void residues(long long v, std::int8_t* r, int N, std::index_sequence<L...>) {
  ((int(L) < N ? void(r[L] = std::int8_t(sym_residue<modulus(int(L))>(v))) : void()), ...);
}
template <std::size_t... L>
unsigned fold_at(int l, long long c, int y, std::index_sequence<L...>) {
  unsigned u = 0;
  ((int(L) == l ? void(u = fold<modulus(int(L))>(c, y)) : void()), ...);
  return u;
}
// f(std::integral_constant<int, m_l>) for the modulus l.
template <class F, std::size_t... L>
void with_modulus(int l, F&& f, std::index_sequence<L...>) {
  ((int(L) == l ? f(std::integral_constant<int, modulus(int(L))>{}) : void()), ...);
}

// The stacked product As Bs (R x W, k-length Kp, R, W and Kp even) modulo mod through one
// Winograd level, as the GPU forms it (winograd_sums, the seven quadrant products, fold_winograd):
// the sums of the quadrants' residues mod mod, seven exact int32 sums, each reduced mod mod, and
// C's quadrants from them (winograd_c). Entry (r, c) at r + c R: a representative mod mod.
template <int mod, class AsF, class BsF>
std::vector<int> winograd_residue_product(index_t R, index_t W, index_t Kp, AsF&& as, BsF&& bs) {
  const index_t hr = R / 2, hw = W / 2, hk = Kp / 2;
  // The operands' sums once (winograd_sums): S_{q+1}(i, h) at SA[(q hk + h) hr + i], T_{q+1}(h, j)
  // at TB[(q hw + j) hk + h]; quadrant q = 2 r + c: op(A)'s r halves its rows and c halves k,
  // op(B)'s r halves k and c its columns.
  std::vector<int> SA(4 * std::size_t(hr) * hk), TB(4 * std::size_t(hk) * hw);
  for (index_t h = 0; h < hk; ++h) {
    for (index_t i = 0; i < hr; ++i) {
      int x[4], y[4];
      for (int q = 0; q < 4; ++q) x[q] = as(i + (q >> 1) * hr, h + (q & 1) * hk);
      winograd_a<mod>(x, y);
      for (int q = 0; q < 4; ++q) SA[(q * hk + h) * hr + i] = y[q];
    }
    for (index_t j = 0; j < hw; ++j) {
      int x[4], y[4];
      for (int q = 0; q < 4; ++q) x[q] = bs(h + (q >> 1) * hk, j + (q & 1) * hw);
      winograd_b<mod>(x, y);
      for (int q = 0; q < 4; ++q) TB[(q * hw + j) * hk + h] = y[q];
    }
  }
  auto a_op = [&](const WinogradOperand& o, index_t i, index_t h) {
    return o.sum ? SA[(o.quadrant * hk + h) * hr + i] : as(i + (o.quadrant >> 1) * hr, h + (o.quadrant & 1) * hk);
  };
  auto b_op = [&](const WinogradOperand& o, index_t h, index_t j) {
    return o.sum ? TB[(o.quadrant * hw + j) * hk + h] : bs(h + (o.quadrant >> 1) * hk, j + (o.quadrant & 1) * hw);
  };
  std::vector<int> P(std::size_t(R) * W);
  for (index_t j = 0; j < hw; ++j)
    for (index_t i = 0; i < hr; ++i) {
      int pr[7], c[4];
      for (int p = 0; p < 7; ++p) {
        int sum = 0;  // exact: Kp / 2 products of residues below 2^7 in magnitude
        for (index_t h = 0; h < hk; ++h) sum += a_op(kWinogradA[p], i, h) * b_op(kWinogradB[p], h, j);
        pr[p] = sum % mod;
      }
      winograd_c(pr, c);
      for (int q = 0; q < 4; ++q) P[(i + (q >> 1) * hr) + (j + (q & 1) * hw) * R] = c[q];
    }
  return P;
}

}  // namespace host_detail

// C = alpha op(A) op(B) + beta C, column-major; k <= 131056 (one exact int32 sum). Declined
// (result.choice.why set, C untouched) where the rule finds no N or the inputs hold NaN or Inf.
// level: one Winograd level in the residues where residue_level allows it, as the GPU takes it
// (the same integers, so the same result).
template <class T>
HostResult host_gemm(const Accuracy& acc, int forced, int levels_above, Op ta, Op tb, index_t m, index_t n,
                     index_t k, T alpha, const T* A, index_t lda, const T* B, index_t ldb, T beta, T* C,
                     index_t ldc, LevelMode level = LevelMode::never) {
  using namespace host_detail;
  using R = real_t<T>;
  constexpr bool cplx = is_complex_v<T>;
  constexpr int parts = cplx ? 2 : 1;
  HostResult res;
  if (m <= 0 || n <= 0 || k <= 0 || k > 131056) {
    res.choice.why = "k out of the host emulation's range";
    return res;
  }
  // op(A)(i, h) and op(B)(h, j), component p, conjugated where asked (as the slices are).
  auto a_at = [&](index_t i, index_t h, int p) {
    const T x = ta == Op::N ? A[i + h * lda] : A[h + i * lda];
    const double v = part(x, p);
    return ta == Op::C && p == 1 ? -v : v;
  };
  auto b_at = [&](index_t h, index_t j, int p) {
    const T x = tb == Op::N ? B[h + j * ldb] : B[j + h * ldb];
    const double v = part(x, p);
    return tb == Op::C && p == 1 ? -v : v;
  };
  std::vector<Outer> sa(m), sb(n);
  Spread spa, spb;
  bool bad = false;
  for (index_t i = 0; i < m; ++i) {
    sa[i] = outer(k, parts, [&](index_t h, int p) { return a_at(i, h, p); });
    bad |= sa[i].bad;
    spa.min_deficit = std::fmax(spa.min_deficit, sa[i].spread);
    spa.mean_deficit = std::fmax(spa.mean_deficit, sa[i].deficit);
  }
  for (index_t j = 0; j < n; ++j) {
    sb[j] = outer(k, parts, [&](index_t h, int p) { return b_at(h, j, p); });
    bad |= sb[j].bad;
    spb.min_deficit = std::fmax(spb.min_deficit, sb[j].spread);
    spb.mean_deficit = std::fmax(spb.mean_deficit, sb[j].deficit);
  }
  if (bad) {
    res.choice.why = "NaN or Inf among the operands";
    return res;
  }
  const bool single = std::is_same_v<R, float>;
  const long long kk = k * parts;
  // The |A||B|-aware statistics: magnitudes floored to 7 bits, exact sums; complex: per
  // component, Re from |Re a||Re b| + |Im a||Im b|, Im from |Re a||Im b| + |Im a||Re b|.
  auto x_lower = [](const std::vector<Outer>& st) {  // (in float, as the GPU's flags keep it)
    float x = 0;
    for (const Outer& o : st) x = std::fmax(x, o.mx > 0 ? float(o.s / o.mx) : 0.f);
    return double(x);
  };
  // paired: rows 2q and 2q + 1 of op(A) (the last one alone where m is odd, the nonzero one
  // where the other is zero) as one, at the pair's shared exponent (pair_exponent), each h's
  // smaller floored magnitude and the pair's larger norms in that scale; columns of op(B) alike.
  auto product = [&](bool paired) {
    ProductStats ps{0, 0};
    auto floor7 = [](double x, int g) { return (long long)std::floor(std::ldexp(std::fabs(x), g)); };
    const index_t step = paired ? 2 : 1;
    for (index_t j0 = 0; j0 < n; j0 += step)
      for (index_t i0 = 0; i0 < m; i0 += step) {
        const index_t i1 = std::min(i0 + step, m) - 1, j1 = std::min(j0 + step, n) - 1;
        const Outer &a0 = sa[i0], &a1 = sa[i1], &b0 = sb[j0], &b1 = sb[j1];
        const index_t ia = a0.s == 0 ? i1 : i0, ib = a1.s == 0 ? i0 : i1;
        const index_t ja = b0.s == 0 ? j1 : j0, jb = b1.s == 0 ? j0 : j1;
        const int Ea = pair_exponent(a0.s, a0.E, a1.s, a1.E), Eb = pair_exponent(b0.s, b0.E, b1.s, b1.E);
        const int ga = magnitude_exponent(a0.s + a1.s, Ea), gb = magnitude_exponent(b0.s + b1.s, Eb);
        auto mag_a = [&](index_t h, int p) { return std::min(floor7(a_at(ia, h, p), ga), floor7(a_at(ib, h, p), ga)); };
        auto mag_b = [&](index_t h, int p) { return std::min(floor7(b_at(h, ja, p), gb), floor7(b_at(h, jb, p), gb)); };
        for (int c = 0; c < parts; ++c) {  // the output's component
          long long S = 0;
          for (index_t h = 0; h < k; ++h)
            for (int p = 0; p < parts; ++p) S += mag_a(h, p) * mag_b(h, p ^ c);
          const ProductTerms t = product_terms(
              pair_norm(a0.s, a0.E, a1.s, a1.E, Ea), pair_norm(a0.l1, a0.E, a1.l1, a1.E, Ea),
              pair_norm(b0.s, b0.E, b1.s, b1.E, Eb), pair_norm(b0.l1, b0.E, b1.l1, b1.E, Eb), S, kk);
          ps.X = std::fmax(ps.X, t.X), ps.Y = std::fmax(ps.Y, t.Y);
        }
      }
    return res.product = ps;
  };
  res.choice = choose_with_product(acc, single, spa, spb, kk, levels_above, forced, x_lower(sa) + x_lower(sb), product);
  const int N = res.choice.N;
  if (N == 0) return res;
  const double bound = scale_bound(N, kk);
  if (bound < 16) {
    res.choice.why = std::to_string(N) + " moduli keep fewer than 4 bits per entry at k = " + std::to_string(k);
    return res;
  }
  std::vector<int> ea(m), eb(n);
  for (index_t i = 0; i < m; ++i) ea[i] = scale_exponent(sa[i].s, sa[i].E, bound);
  for (index_t j = 0; j < n; ++j) eb[j] = scale_exponent(sb[j].s, sb[j].E, bound);

  // Residues: ra[((l * parts + p) * m + i) * k + h], rb[((l * parts + p) * n + j) * k + h].
  const auto seq = std::make_index_sequence<kMaxModuli>{};
  std::vector<std::int8_t> ra(std::size_t(N) * parts * m * k), rb(std::size_t(N) * parts * n * k);
  std::int8_t r[kMaxModuli];
  for (int p = 0; p < parts; ++p) {
    for (index_t i = 0; i < m; ++i)
      for (index_t h = 0; h < k; ++h) {
        residues(std::llrint(std::ldexp(a_at(i, h, p), ea[i])), r, N, seq);
        for (int l = 0; l < N; ++l) ra[((std::size_t(l) * parts + p) * m + i) * k + h] = r[l];
      }
    for (index_t j = 0; j < n; ++j)
      for (index_t h = 0; h < k; ++h) {
        residues(std::llrint(std::ldexp(b_at(h, j, p), eb[j])), r, N, seq);
        for (int l = 0; l < N; ++l) rb[((std::size_t(l) * parts + p) * n + j) * k + h] = r[l];
      }
  }
  const Crt crt = crt_constants(N);
  auto dot = [&](int l, int pa, index_t i, int pb, index_t j) {
    const std::int8_t* x = &ra[((std::size_t(l) * parts + pa) * m + i) * k];
    const std::int8_t* y = &rb[((std::size_t(l) * parts + pb) * n + j) * k];
    int s = 0;  // exact: k 2^14 < 2^31
    for (index_t h = 0; h < k; ++h) s += int(x[h]) * int(y[h]);
    return (long long)s;
  };
  // Each modulus' product, stacked ([Re A; Im A] [Re B, Im B] for complex), through the level:
  // stacked row r is row r % m of component r / m, k padded with zeros to Kp as the GPU pads it.
  const index_t Kp = (k + 15) / 16 * 16;
  res.residue_level = residue_level(level, parts * m, parts * n, Kp);
  std::vector<std::vector<int>> stacked(res.residue_level ? N : 0);
  for (int l = 0; l < int(stacked.size()); ++l)
    with_modulus(l, [&](auto mc) {
      constexpr int mod = decltype(mc)::value;
      auto as = [&](index_t r, index_t h) {
        return h < k ? int(ra[((std::size_t(l) * parts + r / m) * m + r % m) * k + h]) : 0;
      };
      auto bs = [&](index_t h, index_t c) {
        return h < k ? int(rb[((std::size_t(l) * parts + c / n) * n + c % n) * k + h]) : 0;
      };
      stacked[l] = winograd_residue_product<mod>(parts * m, parts * n, Kp, as, bs);
    }, seq);
  // the product of components pa (of op(A)) and pb (of op(B)) at (i, j), modulus l
  auto product_of = [&](int l, int pa, index_t i, int pb, index_t j) {
    if (!res.residue_level) return dot(l, pa, i, pb, j);
    return (long long)stacked[l][(i + pa * m) + (j + pb * n) * (parts * m)];
  };
  const std::complex<double> al(alpha), be(beta);
  for (index_t j = 0; j < n; ++j)
    for (index_t i = 0; i < m; ++i) {
      double v[2] = {0, 0};
      for (int p = 0; p < parts; ++p) {
        U128 S;
        for (int l = 0; l < N; ++l) {
          // real: the one product; complex: Re = RR - II, Im = RI + IR
          const long long c = !cplx ? product_of(l, 0, i, 0, j)
                              : p == 0 ? product_of(l, 0, i, 0, j) - product_of(l, 1, i, 1, j)
                                       : product_of(l, 0, i, 1, j) + product_of(l, 1, i, 0, j);
          crt_add(S, crt, l, fold_at(l, c, crt.y[l], seq));
        }
        v[p] = std::ldexp(crt_signed(S, crt), -(ea[i] + eb[j]));
      }
      T& c = C[i + j * ldc];
      if constexpr (!cplx) {
        double out = al.real() * v[0];
        if (be.real() != 0) out += be.real() * double(c);
        c = T(out);
      } else {
        double re = al.real() * v[0] - al.imag() * v[1], im = al.real() * v[1] + al.imag() * v[0];
        if (be != 0.0) {
          const double cr = c.real(), ci = c.imag();
          re += be.real() * cr - be.imag() * ci, im += be.real() * ci + be.imag() * cr;
        }
        c = T(R(re), R(im));
      }
    }
  return res;
}

}  // namespace distmm::ozaki
