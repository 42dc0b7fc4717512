#include "recursive_gemm.hpp"

#include "../src/core/timer.hpp"

namespace distmm {

MachineRates calibrate_rates() {
  MachineRates r;
  const index_t n = 1024;
  std::vector<double> a(n * n, 0.5), b(n * n, 0.25), c(n * n, 0.0);
  blas_gemm<double>(Op::N, Op::N, n, n, n, 1.0, a.data(), n, b.data(), n, 0.0, c.data(), n);
  Stopwatch sw;
  blas_gemm<double>(Op::N, Op::N, n, n, n, 1.0, a.data(), n, b.data(), n, 0.0, c.data(), n);
  r.flops_per_s = 2.0 * n * n * n / std::max(sw.seconds(), 1e-6);
  // A streaming pass of two inputs and one output, larger than the caches.
  const index_t len = 1 << 22;
  std::vector<double> x(len, 1.0), y(len, 2.0), z(len, 0.0);
  // 64 columns of len / 64 rows: the shape of the real passes, and OpenMP splits the columns.
  const index_t rows = len / 64;
  std::array<ConstBlock<double>, 2> in{{{x.data(), rows}, {y.data(), rows}}};
  std::array<MutBlock<double>, 1> out{{{z.data(), rows, false}}};
  std::array<std::array<double, 2>, 1> coef{{{1.0, -1.0}}};
  fused_combine<double, 2, 1>(rows, 64, in, out, coef);
  Stopwatch sw2;
  for (int t = 0; t < 3; ++t) fused_combine<double, 2, 1>(rows, 64, in, out, coef);
  r.bytes_per_s = 3.0 * 3 * len * sizeof(double) / std::max(sw2.seconds(), 1e-6);
  return r;
}

int choose_levels(index_t m, index_t n, index_t k, Dtype dt, double passes_per_level,
                  index_t cutoff, const MachineRates& rates) {
  // T(L) = 2mnk (7/8)^L / F(d_L) (8mnk for complex types) + sum_{d<L} 7^d passes S_d / BW, with S_d the bytes of one
  // quarter-size operand at depth d and F(d) the BLAS rate, lower on small leaves.
  auto blas_rate = [&](double dim) { return rates.flops_per_s * dim / (dim + 96.0); };
  const double elem = double(size_of(dt)), flops_per_fma = is_complex(dt) ? 8.0 : 2.0;
  double best_t = 0;
  int best = 0;
  double adds = 0;
  for (int L = 0; L <= 4; ++L) {
    double f = std::pow(2.0, L);
    double lm = double(m) / f, ln = double(n) / f, lk = double(k) / f;
    if (L > 0) {
      double pm = lm * 2, pn = ln * 2, pk = lk * 2;  // the problem split at this level
      if (std::min({pm, pn, pk}) < double(std::max<index_t>(cutoff, 2))) break;
      double quarter = (lm * lk + lk * ln + lm * ln) / 3.0 * elem;
      adds += std::pow(7.0, L - 1) * passes_per_level * quarter / rates.bytes_per_s;
    }
    double t = flops_per_fma * double(m) * n * k * std::pow(7.0 / 8.0, L) /
                   blas_rate(std::min({lm, ln, lk})) + adds;
    if (L == 0 || t < best_t) best_t = t, best = L;
  }
  return best;
}

}  // namespace distmm
