#include "verify.hpp"

#include <cmath>
#include <limits>

#include "../node/blas.hpp"

namespace distmm {

double verify_tolerance(Dtype dt, index_t k, double growth) {
  double u = dt == Dtype::f32 ? std::numeric_limits<float>::epsilon() / 2
                              : std::numeric_limits<double>::epsilon() / 2;
  return growth * static_cast<double>(k + 2) * u;
}

namespace {

// y[global row] += M x[global col] and, for the bound, ya += |M| |x|, over this rank's piece.
template <class T>
void local_matvec(const DistMatrix<T>& M, const std::vector<double>& x, std::vector<double>& y,
                  const std::vector<double>& xa, std::vector<double>& ya) {
  auto rows = Piece::globals(M.piece.row_runs);
  auto cols = Piece::globals(M.piece.col_runs);
  for (std::size_t c = 0; c < cols.size(); ++c) {
    double xc = x[cols[c]], xac = xa[cols[c]];
    const T* col = M.local.data() + c * M.local.ld();
    for (std::size_t r = 0; r < rows.size(); ++r) {
      double v = static_cast<double>(col[r]);
      y[rows[r]] += v * xc;
      ya[rows[r]] += std::abs(v) * xac;
    }
  }
}

}  // namespace

template <class T>
VerifyResult verify_freivalds(const DistMatrix<T>& A, const DistMatrix<T>& B,
                              const DistMatrix<T>& C, T alpha, T beta, const DistMatrix<T>* C0,
                              int trials, std::uint64_t seed, double tol, const Comm& comm) {
  const index_t m = C.rows, n = C.cols, k = A.cols;
  VerifyResult res;
  res.method = "freivalds";
  res.trials = trials;
  res.tolerance = tol;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> x(n), xa(n);
    for (index_t j = 0; j < n; ++j) {
      x[j] = random_value(seed + 7919 * t, Stream::Probe, j, 0, Fill::uniform);
      xa[j] = std::abs(x[j]);
    }
    // y = B x and its bound, on all ranks (k words of allreduce each).
    std::vector<double> y(2 * k, 0.0);
    {
      std::vector<double> yv(k, 0.0), ya(k, 0.0);
      local_matvec(B, x, yv, xa, ya);
      std::copy(yv.begin(), yv.end(), y.begin());
      std::copy(ya.begin(), ya.end(), y.begin() + k);
      comm.allreduce_sum_uncounted(y.data(), 2 * k);
    }
    std::vector<double> yv(y.begin(), y.begin() + k), ya(y.begin() + k, y.end());
    // z = alpha A y + beta C0 x - C x with bound |alpha| |A| |B| |x| + |beta| |C0| |x|.
    std::vector<double> az(m, 0.0), azb(m, 0.0), cz(m, 0.0), czb(m, 0.0), c0z(m, 0.0),
        c0zb(m, 0.0);
    local_matvec(A, yv, az, ya, azb);
    local_matvec(C, x, cz, xa, czb);
    if (C0 && beta != T(0)) local_matvec(*C0, x, c0z, xa, c0zb);
    std::vector<double> all(4 * m);
    for (index_t i = 0; i < m; ++i) {
      all[i] = az[i];
      all[m + i] = azb[i];
      all[2 * m + i] = cz[i] - double(beta) * c0z[i];
      all[3 * m + i] = c0zb[i];
    }
    comm.allreduce_sum_uncounted(all.data(), 4 * m);
    for (index_t i = 0; i < m; ++i) {
      double diff = std::abs(all[2 * m + i] - double(alpha) * all[i]);
      double bound = std::abs(double(alpha)) * all[m + i] + std::abs(double(beta)) * all[3 * m + i];
      double r = diff == 0 ? 0 : diff / std::max(bound, std::numeric_limits<double>::min());
      res.residual = std::isnan(r) ? INFINITY : std::max(res.residual, r);
    }
  }
  res.passed = res.residual <= tol;
  return res;
}

std::size_t verify_full_bytes(index_t m, index_t n, index_t k) {
  return static_cast<std::size_t>(m * k + k * n + 4 * m * n) * sizeof(double) * 2;
}

template <class T>
VerifyResult verify_full(const DistMatrix<T>& A, const DistMatrix<T>& B, const DistMatrix<T>& C,
                         T alpha, T beta, const DistMatrix<T>* C0, double tol, const Comm& comm) {
  VerifyResult res;
  res.method = "full";
  res.trials = 1;
  res.tolerance = tol;
  Matrix<T> a = gather_to_root(A, comm), b = gather_to_root(B, comm), c = gather_to_root(C, comm);
  Matrix<T> c0;
  if (C0) c0 = gather_to_root(*C0, comm);
  double stats[4] = {0, 0, 0, 0};  // residual, rel frobenius, max abs, passed
  if (comm.rank() == 0) {
    const index_t m = C.rows, n = C.cols, k = A.cols;
    auto to_double = [](const Matrix<T>& s, bool absval) {
      Matrix<double> d(s.rows(), s.cols());
      for (index_t t = 0; t < s.size(); ++t)
        d.data()[t] = absval ? std::abs(double(s.data()[t])) : double(s.data()[t]);
      return d;
    };
    Matrix<double> ad = to_double(a, false), bd = to_double(b, false);
    Matrix<double> ref(m, n), bound(m, n);
    ref.fill(0.0);
    bound.fill(0.0);
    if (C0 && beta != T(0)) {
      ref = to_double(c0, false);
      bound = to_double(c0, true);
    }
    blas_gemm<double>(Op::N, Op::N, m, n, k, double(alpha), ad.data(), ad.ld(), bd.data(), bd.ld(),
                      double(beta), ref.data(), ref.ld());
    ad = to_double(a, true);
    bd = to_double(b, true);
    blas_gemm<double>(Op::N, Op::N, m, n, k, std::abs(double(alpha)), ad.data(), ad.ld(),
                      bd.data(), bd.ld(), std::abs(double(beta)), bound.data(), bound.ld());
    double err2 = 0, ref2 = 0, maxabs = 0, resid = 0;
    for (index_t t = 0; t < ref.size(); ++t) {
      double d = std::abs(double(c.data()[t]) - ref.data()[t]);
      if (std::isnan(d)) d = INFINITY;
      err2 += d * d;
      ref2 += ref.data()[t] * ref.data()[t];
      maxabs = std::max(maxabs, d);
      if (d > 0) resid = std::max(resid, d / std::max(bound.data()[t], 1e-300));
    }
    stats[0] = resid;
    stats[1] = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
    stats[2] = maxabs;
  }
  MPI_Bcast(stats, 3, MPI_DOUBLE, 0, comm.get());
  res.residual = stats[0];
  res.rel_frobenius = stats[1];
  res.max_abs = stats[2];
  res.passed = res.residual <= tol;
  return res;
}

template VerifyResult verify_freivalds(const DistMatrix<float>&, const DistMatrix<float>&,
                                       const DistMatrix<float>&, float, float,
                                       const DistMatrix<float>*, int, std::uint64_t, double,
                                       const Comm&);
template VerifyResult verify_freivalds(const DistMatrix<double>&, const DistMatrix<double>&,
                                       const DistMatrix<double>&, double, double,
                                       const DistMatrix<double>*, int, std::uint64_t, double,
                                       const Comm&);
template VerifyResult verify_full(const DistMatrix<float>&, const DistMatrix<float>&,
                                  const DistMatrix<float>&, float, float,
                                  const DistMatrix<float>*, double, const Comm&);
template VerifyResult verify_full(const DistMatrix<double>&, const DistMatrix<double>&,
                                  const DistMatrix<double>&, double, double,
                                  const DistMatrix<double>*, double, const Comm&);

}  // namespace distmm
