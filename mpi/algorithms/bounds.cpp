#include "bounds.hpp"

#include <algorithm>
#include <array>
#include <functional>
#include <string>
#include <cmath>

namespace distmm {

LowerBound classical_lower_bound(index_t m, index_t n, index_t k, int P, double M) {
  const double mnk = double(m) * double(n) * double(k);
  const double dep = mnk / (2.0 * std::sqrt(2.0) * P * std::sqrt(std::max(M, 1.0))) - M;
  // Memory-independent, for the actual shape: with the dimensions sorted d1 >= d2 >= d3, a rank
  // doing mnk/P multiply-adds touches at least D elements of A, B and C (Loomis-Whitney, with
  // each projection at least its share: the three cases of Demmel et al. 2013, with the tight
  // constants of Al Daas, Ballard, Grigori, Kumar & Rouse 2022), of which it can own at most
  // one P-th of the data:
  //   P <= d1/d2:            D = d1 d2 / P + d1 d3 / P + d2 d3       (one large dimension)
  //   d1/d2 <= P <= d1 d2/d3^2: D = 2 d3 sqrt(d1 d2 / P) + d1 d2 / P (two large dimensions)
  //   P >= d1 d2 / d3^2:     D = 3 (d1 d2 d3 / P)^(2/3)              (three large dimensions)
  //   words >= D - (mn + mk + nk) / P, positive for P > 1 whenever data must move.
  std::array<double, 3> d{double(m), double(n), double(k)};
  std::sort(d.begin(), d.end(), std::greater<>());
  const double d1 = d[0], d2 = d[1], d3 = d[2], p = double(P);
  double D;
  std::string which;
  if (p <= d1 / d2) {
    D = d1 * d2 / p + d1 * d3 / p + d2 * d3;
    which = "d2 d3 (1 - 1/P), one large dimension";
  } else if (d3 > 0 && p <= d1 * d2 / (d3 * d3)) {
    D = 2 * d3 * std::sqrt(d1 * d2 / p) + d1 * d2 / p;
    which = "2 d3 sqrt(d1 d2/P) - (d1 d3 + d2 d3)/P, two large dimensions";
  } else {
    D = 3.0 * std::pow(mnk / p, 2.0 / 3.0);
    which = "3 (mnk/P)^(2/3) - (mn+mk+nk)/P, three large dimensions";
  }
  const double ind = D - (d1 * d2 + d1 * d3 + d2 * d3) / p;
  if (dep >= ind) return {std::max(dep, 0.0), "mnk/(2 sqrt(2) P sqrt(M)) - M, memory-dependent"};
  return {std::max(ind, 0.0), which + " (d1 >= d2 >= d3 the sorted m, n, k)"};
}

LowerBound strassen_lower_bound(index_t n, int P, double M) {
  const double w0 = std::log2(7.0);
  double dep = std::pow(double(n), w0) / (P * std::pow(std::max(M, 1.0), w0 / 2 - 1));
  double ind = double(n) * double(n) / std::pow(double(P), 2.0 / w0);
  if (dep >= ind) return {dep, "n^w0/(P M^(w0/2-1))"};
  return {ind, "n^2/P^(2/w0)"};
}

}  // namespace distmm
