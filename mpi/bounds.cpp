#include "bounds.hpp"

#include <algorithm>
#include <cmath>

namespace distmm {

LowerBound classical_lower_bound(index_t m, index_t n, index_t k, int P, double M) {
  double mnk = double(m) * double(n) * double(k);
  double dep = mnk / (2.0 * std::sqrt(2.0) * P * std::sqrt(std::max(M, 1.0))) - M;
  double ind = 3.0 * std::pow(mnk / P, 2.0 / 3.0) -
               (double(m) * n + double(m) * k + double(n) * k) / P;
  if (dep >= ind) return {std::max(dep, 0.0), "mnk/(2 sqrt(2) P sqrt(M)) - M"};
  return {std::max(ind, 0.0), "3 (mnk/P)^(2/3) - (mn+mk+nk)/P"};
}

LowerBound strassen_lower_bound(index_t n, int P, double M) {
  const double w0 = std::log2(7.0);
  double dep = std::pow(double(n), w0) / (P * std::pow(std::max(M, 1.0), w0 / 2 - 1));
  double ind = double(n) * double(n) / std::pow(double(P), 2.0 / w0);
  if (dep >= ind) return {dep, "n^w0/(P M^(w0/2-1))"};
  return {ind, "n^2/P^(2/w0)"};
}

}  // namespace distmm
