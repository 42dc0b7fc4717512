#include "verify.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "../../node/blas.hpp"

namespace distmm {

// gamma_{k+2} ~ (k + 2) u bounds a real inner product's error componentwise, and a complex one's
// with |z| the modulus (Higham, Lemma 3.5), so one formula serves the whole dtype list.
double verify_tolerance(Dtype dt, index_t k, double growth) {
  return growth * static_cast<double>(k + 2) * unit_roundoff(dt);
}

namespace {

template <class T>
Wide<T> widen(T v) {
  return static_cast<Wide<T>>(v);
}

// y[global row] += M x[global col] and, for the bound, ya += |M| |x|, over this rank's piece.
template <class T, class X>
void local_matvec(const DistMatrix<T>& M, const std::vector<X>& x, std::vector<Wide<T>>& y,
                  const std::vector<double>& xa, std::vector<double>& ya) {
  auto rows = Piece::globals(M.piece.row_runs);
  auto cols = Piece::globals(M.piece.col_runs);
  for (std::size_t c = 0; c < cols.size(); ++c) {
    const X xc = x[cols[c]];
    const double xac = xa[cols[c]];
    const T* col = M.local.data() + c * M.local.ld();
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const Wide<T> v = widen(col[r]);
      y[rows[r]] += v * xc;
      ya[rows[r]] += std::abs(v) * xac;
    }
  }
}

}  // namespace

namespace {

// max |M(r, c)| over this rank's piece (for complex entries the modulus).
template <class T>
double local_max_abs(const Matrix<T>& M) {
  double mx = 0;
  for (index_t c = 0; c < M.cols(); ++c)
    for (index_t r = 0; r < M.rows(); ++r) mx = std::max(mx, double(std::abs(M(r, c))));
  return mx;
}

// Freivalds' check over any storage of the operands, in two halves: the reference from the
// inputs (freivalds_reference), taken before the multiply where the caller can, so that a
// multiply that wrote into its inputs cannot pass, and the comparison with C x after it
// (freivalds_check). matvec(which, x, xa, y, ya) adds this rank's piece of operand `which`
// ('A', 'B', 'C' or '0' for C0) times x into y (by global row) and |piece| xa into ya; the sums
// over ranks and the verdict are the same for host and device.
// Trial t's probe x (from the seed, the same in both halves), |x| and |x|_1.
struct Probe {
  std::vector<double> x, xa;
  double x1 = 0;
};
Probe freivalds_probe(index_t n, std::uint64_t seed, int t) {
  Probe p{std::vector<double>(n), std::vector<double>(n)};
  for (index_t j = 0; j < n; ++j) {
    p.x[j] = random_value(seed + 7919 * t, Stream::Probe, j, 0, Fill::uniform);
    p.xa[j] = std::abs(p.x[j]);
    p.x1 += p.xa[j];
  }
  return p;
}

template <class T, class Matvec, class MaxAbs>
FreivaldsReference<T> freivalds_reference(index_t m, index_t n, index_t k, T alpha, T beta, bool with_c0, int trials,
                                          std::uint64_t seed, const Comm& comm, Matvec&& matvec, MaxAbs&& max_abs) {
  FreivaldsReference<T> ref;
  ref.m = m, ref.n = n, ref.k = k, ref.alpha = alpha, ref.beta = beta, ref.trials = trials, ref.seed = seed;
  ref.with_c0 = with_c0 && beta != T(0);
  // max|A| max|B| over all ranks, for a Strassen-like product's normwise term (verify.hpp)
  double mx[2] = {max_abs('A'), max_abs('B')};
  MPI_Allreduce(MPI_IN_PLACE, mx, 2, MPI_DOUBLE, MPI_MAX, comm.get());
  ref.max_ab = mx[0] * mx[1];
  using W = Wide<T>;
  for (int t = 0; t < trials; ++t) {
    const Probe p = freivalds_probe(n, seed, t);
    const std::vector<double>&x = p.x, &xa = p.xa;
    // y = B x and its bound, on all ranks (k words of allreduce each).
    std::vector<W> yv(k, W(0));
    std::vector<double> ya(k, 0.0);
    matvec('B', x, xa, yv, ya);
    comm.allreduce_sum_uncounted(yv.data(), k);
    comm.allreduce_sum_uncounted(ya.data(), k);
    // A y and C0 x with their bounds |A| |B| |x| and |C0| |x|, summed over ranks.
    std::vector<W> az(m, W(0)), c0z(m, W(0));
    std::vector<double> azb(m, 0.0), c0zb(m, 0.0);
    matvec('A', yv, ya, az, azb);
    if (ref.with_c0) matvec('0', x, xa, c0z, c0zb);
    comm.allreduce_sum_uncounted(az.data(), m);
    comm.allreduce_sum_uncounted(azb.data(), m);
    if (ref.with_c0) {  // else C0 x stays zero on every rank: nothing to sum
      comm.allreduce_sum_uncounted(c0z.data(), m);
      comm.allreduce_sum_uncounted(c0zb.data(), m);
    }
    ref.ay.push_back(std::move(az)), ref.c0x.push_back(std::move(c0z));
    ref.ay_bound.push_back(std::move(azb)), ref.c0x_bound.push_back(std::move(c0zb));
  }
  return ref;
}

// z = alpha A y + beta C0 x - C x against |alpha| |A| |B| |x| + |beta| |C0| |x| (and the
// normwise term), component by component.
template <class T, class Matvec>
VerifyResult freivalds_check(const FreivaldsReference<T>& ref, double tol, const Comm& comm, Matvec&& matvec_c,
                             bool normwise) {
  VerifyResult res;
  res.method = "freivalds";
  res.trials = ref.trials;
  res.tolerance = tol;
  const index_t m = ref.m, n = ref.n;
  const double ab = normwise ? double(ref.k + 4) * ref.max_ab : 0.0;
  using W = Wide<T>;
  for (int t = 0; t < ref.trials; ++t) {
    const Probe p = freivalds_probe(n, ref.seed, t);
    std::vector<W> cz(m, W(0));
    std::vector<double> czb(m, 0.0);
    matvec_c(p.x, p.xa, cz, czb);
    comm.allreduce_sum_uncounted(cz.data(), m);
    const std::size_t u = std::size_t(t);
    const auto &ay = ref.ay[u], &c0x = ref.c0x[u];
    const auto &ay_bound = ref.ay_bound[u], &c0x_bound = ref.c0x_bound[u];
    for (index_t i = 0; i < m; ++i) {
      double diff = std::abs(cz[i] - widen(ref.beta) * c0x[i] - widen(ref.alpha) * ay[i]);
      double bound = std::abs(widen(ref.alpha)) * (ay_bound[i] + ab * p.x1) + std::abs(widen(ref.beta)) * c0x_bound[i];
      double r = diff == 0 ? 0 : diff / std::max(bound, std::numeric_limits<double>::min());
      res.residual = std::isnan(r) ? INFINITY : std::max(res.residual, r);
    }
  }
  res.passed = res.residual <= tol;
  return res;
}

}  // namespace

template <class T>
VerifyResult verify_freivalds(const DistMatrix<T>& A, const DistMatrix<T>& B,
                              const DistMatrix<T>& C, T alpha, T beta, const DistMatrix<T>* C0,
                              int trials, std::uint64_t seed, double tol, const Comm& comm,
                              bool normwise) {
  auto matvec = [&](char which, const auto& x, const auto& xa, auto& y, auto& ya) {
    local_matvec(which == 'A' ? A : which == 'B' ? B : *C0, x, y, xa, ya);
  };
  auto max_abs = [&](char which) { return local_max_abs((which == 'A' ? A : B).local); };
  const auto ref = freivalds_reference<T>(C.rows, C.cols, A.cols, alpha, beta, C0 != nullptr, trials, seed, comm,
                                          matvec, max_abs);
  auto matvec_c = [&](const auto& x, const auto& xa, auto& y, auto& ya) { local_matvec(C, x, y, xa, ya); };
  return freivalds_check(ref, tol, comm, matvec_c, normwise);
}

namespace {
// y += M x over this rank's device piece (in double), |M| |x| into ya.
template <class T, class X, class Y>
void device_matvec(DeviceSpace& space, const DeviceDistMatrix& M, const std::vector<X>& x, const std::vector<double>& xa,
                   std::vector<Y>& y, std::vector<double>& ya) {
  constexpr int xp = sizeof(X) / sizeof(double), yp = sizeof(Y) / sizeof(double);
  const double* xd = reinterpret_cast<const double*>(x.data());
  double* yd = reinterpret_cast<double*>(y.data());
  for_each_run_block(M.piece, [&](index_t lr, index_t lc, index_t gr, index_t gc, index_t nr, index_t nc) {
    space.matvec(M.template data<const T>() + lr + lc * M.ld, M.ld, nr, nc, dtype_of<T>(), xd + gc * xp, xp == 2,
                 xa.data() + gc, yd + gr * yp, ya.data() + gr);
  });
}
}  // namespace

template <class T>
FreivaldsReference<T> freivalds_reference_device(DeviceSpace& space, const DeviceDistMatrix& A,
                                                 const DeviceDistMatrix& B, T alpha, T beta,
                                                 const DeviceDistMatrix* C0, int trials, std::uint64_t seed,
                                                 index_t n, const Comm& comm) {
  space.synchronize();
  auto matvec = [&](char which, const auto& x, const auto& xa, auto& y, auto& ya) {
    device_matvec<T>(space, which == 'A' ? A : which == 'B' ? B : *C0, x, xa, y, ya);
  };
  auto max_abs = [&](char which) {
    const DeviceDistMatrix& M = which == 'A' ? A : B;
    double mx = 0;
    for_each_run_block(M.piece, [&](index_t lr, index_t lc, index_t, index_t, index_t nr, index_t nc) {
      mx = std::max(mx, space.max_abs(M.template data<const T>() + lr + lc * M.ld, M.ld, nr, nc, dtype_of<T>()));
    });
    return mx;
  };
  return freivalds_reference<T>(A.rows, n, A.cols, alpha, beta, C0 != nullptr, trials, seed, comm, matvec, max_abs);
}

template <class T>
VerifyResult verify_freivalds_device(DeviceSpace& space, const FreivaldsReference<T>& ref, const DeviceDistMatrix& C,
                                     double tol, const Comm& comm, bool normwise) {
  space.synchronize();
  auto matvec_c = [&](const auto& x, const auto& xa, auto& y, auto& ya) { device_matvec<T>(space, C, x, xa, y, ya); };
  VerifyResult res = freivalds_check(ref, tol, comm, matvec_c, normwise);
  res.method = space.emulated() ? "freivalds (on the emulated device)" : "freivalds (on the GPU)";
  return res;
}

template <class T>
VerifyResult verify_freivalds_device(DeviceSpace& space, const DeviceDistMatrix& A,
                                     const DeviceDistMatrix& B, const DeviceDistMatrix& C, T alpha,
                                     T beta, const DeviceDistMatrix* C0, int trials,
                                     std::uint64_t seed, double tol, const Comm& comm, bool normwise) {
  const auto ref = freivalds_reference_device<T>(space, A, B, alpha, beta, C0, trials, seed, C.cols, comm);
  return verify_freivalds_device<T>(space, ref, C, tol, comm, normwise);
}

template <class T>
NonFinite find_nonfinite(const DistMatrix<T>& M, const Comm& comm) {
  std::int64_t counts[2] = {0, 0};  // NaNs, Infs
  std::int64_t first = INT64_MAX;   // column-major global index of the first
  const auto rows = Piece::globals(M.piece.row_runs), cols = Piece::globals(M.piece.col_runs);
  for (std::size_t c = 0; c < cols.size(); ++c)
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const T v = M.local(static_cast<index_t>(r), static_cast<index_t>(c));
      const bool nan = std::isnan(std::real(v)) || std::isnan(std::imag(v));
      const bool inf = !nan && (std::isinf(std::real(v)) || std::isinf(std::imag(v)));
      if (!nan && !inf) continue;
      ++counts[nan ? 0 : 1];
      first = std::min<std::int64_t>(first, cols[c] * M.rows + rows[r]);
    }
  comm.allreduce_sum_uncounted(counts, 2);
  MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT64_T, MPI_MIN, comm.get());
  NonFinite nf;
  nf.nans = counts[0], nf.infs = counts[1];
  if (nf.any()) nf.first_row = first % M.rows, nf.first_col = first / M.rows;
  return nf;
}

std::size_t verify_full_bytes(index_t m, index_t n, index_t k, Dtype dt) {
  return static_cast<std::size_t>(m * k + k * n + 4 * m * n) * sizeof(double) * 2 *
         (is_complex(dt) ? 2 : 1);
}

template <class T>
VerifyResult verify_full(const DistMatrix<T>& A, const DistMatrix<T>& B, const DistMatrix<T>& C,
                         T alpha, T beta, const DistMatrix<T>* C0, double tol, const Comm& comm,
                         bool normwise) {
  VerifyResult res;
  res.method = "full";
  res.trials = 1;
  res.tolerance = tol;
  Matrix<T> a = gather_to_root(A, comm), b = gather_to_root(B, comm), c = gather_to_root(C, comm);
  Matrix<T> c0;
  if (C0) c0 = gather_to_root(*C0, comm);
  double stats[4] = {0, 0, 0, 0};  // residual, rel frobenius, max abs, non-finite matched
  if (comm.rank() == 0) {
    using W = Wide<T>;
    const index_t m = C.rows, n = C.cols, k = A.cols;
    auto widened = [](const Matrix<T>& s) {
      Matrix<W> d(s.rows(), s.cols());
      for (index_t t = 0; t < s.size(); ++t) d.data()[t] = widen(s.data()[t]);
      return d;
    };
    auto moduli = [](const Matrix<T>& s) {
      Matrix<double> d(s.rows(), s.cols());
      for (index_t t = 0; t < s.size(); ++t) d.data()[t] = std::abs(widen(s.data()[t]));
      return d;
    };
    Matrix<W> ref(m, n);
    Matrix<double> bound(m, n);
    ref.fill(W(0));
    bound.fill(0.0);
    if (C0 && beta != T(0)) {
      ref = widened(c0);
      bound = moduli(c0);
    }
    {
      Matrix<W> ad = widened(a), bd = widened(b);
      blas_gemm<W>(Op::N, Op::N, m, n, k, widen(alpha), ad.data(), ad.ld(), bd.data(), bd.ld(),
                   widen(beta), ref.data(), ref.ld());
    }
    {
      Matrix<double> ad = moduli(a), bd = moduli(b);
      blas_gemm<double>(Op::N, Op::N, m, n, k, std::abs(widen(alpha)), ad.data(), ad.ld(),
                        bd.data(), bd.ld(), std::abs(widen(beta)), bound.data(), bound.ld());
      if (normwise) {  // a Strassen-like product's normwise term (verify.hpp)
        const double amax = ad.size() ? *std::max_element(ad.data(), ad.data() + ad.size()) : 0.0,
                     bmax = bd.size() ? *std::max_element(bd.data(), bd.data() + bd.size()) : 0.0;
        const double add = std::abs(widen(alpha)) * double(k + 4) * amax * bmax;
        for (index_t t = 0; t < bound.size(); ++t) bound.data()[t] += add;
      }
    }
    // Non-finite entries (from non-finite inputs, or overflow) must sit where the reference
    // has them: there they are compared by position only; anywhere else they fail.
    double err2 = 0, ref2 = 0, maxabs = 0, resid = 0, matched = 0;
    auto finite = [](auto z) { return std::isfinite(std::real(z)) && std::isfinite(std::imag(z)); };
    for (index_t t = 0; t < ref.size(); ++t) {
      const bool cf = finite(widen(c.data()[t])), rf = finite(ref.data()[t]);
      if (!cf || !rf) {
        if (cf != rf) resid = maxabs = err2 = INFINITY;
        else matched += 1;
        continue;
      }
      const double d = std::abs(widen(c.data()[t]) - ref.data()[t]);
      err2 += d * d;
      ref2 += std::norm(ref.data()[t]);
      maxabs = std::max(maxabs, d);
      if (d > 0) resid = std::max(resid, d / std::max(bound.data()[t], 1e-300));
    }
    stats[0] = resid;
    stats[1] = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
    stats[2] = maxabs;
    stats[3] = matched;
  }
  MPI_Bcast(stats, 4, MPI_DOUBLE, 0, comm.get());
  res.residual = stats[0];
  res.nonfinite_matched = static_cast<index_t>(stats[3]);
  res.rel_frobenius = stats[1];
  res.max_abs = stats[2];
  res.passed = res.residual <= tol;
  return res;
}

#define DISTMM_VERIFY(T)                                                                        \
  template VerifyResult verify_freivalds(const DistMatrix<T>&, const DistMatrix<T>&,              \
                                         const DistMatrix<T>&, T, T, const DistMatrix<T>*, int,   \
                                         std::uint64_t, double, const Comm&, bool);               \
  template VerifyResult verify_freivalds_device<T>(DeviceSpace&, const DeviceDistMatrix&,         \
                                                   const DeviceDistMatrix&, const DeviceDistMatrix&, \
                                                   T, T, const DeviceDistMatrix*, int,            \
                                                   std::uint64_t, double, const Comm&, bool);     \
  template FreivaldsReference<T> freivalds_reference_device<T>(DeviceSpace&, const DeviceDistMatrix&, \
                                                               const DeviceDistMatrix&, T, T,        \
                                                               const DeviceDistMatrix*, int,         \
                                                               std::uint64_t, index_t, const Comm&); \
  template VerifyResult verify_freivalds_device<T>(DeviceSpace&, const FreivaldsReference<T>&,     \
                                                   const DeviceDistMatrix&, double, const Comm&, bool); \
  template VerifyResult verify_full(const DistMatrix<T>&, const DistMatrix<T>&,                   \
                                    const DistMatrix<T>&, T, T, const DistMatrix<T>*, double,     \
                                    const Comm&, bool);                                            \
  template NonFinite find_nonfinite(const DistMatrix<T>&, const Comm&);
DISTMM_FOR_EACH_TYPE(DISTMM_VERIFY)
#undef DISTMM_VERIFY

}  // namespace distmm
