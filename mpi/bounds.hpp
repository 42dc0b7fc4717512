// Communication lower bounds per rank, in words, for the report and the docs.
#pragma once
#include <string>

#include "../src/core/types.hpp"

namespace distmm {

struct LowerBound {
  double words = 0;
  std::string which;  // the formula that gave the larger bound
};

// Classical O(mnk) multiplication on P ranks with M words of memory each:
//   memory-dependent (Irony, Toledo & Tiskin 2004):  mnk / (2 sqrt(2) P sqrt(M)) - M
//   memory-independent (Ballard et al. SPAA 2012; Demmel et al. IPDPS 2013):
//                                                  3 (mnk / P)^(2/3) - (mn + mk + nk) / P
LowerBound classical_lower_bound(index_t m, index_t n, index_t k, int P, double M);

// Strassen-like multiplication with exponent w0 = log2 7 (Ballard, Demmel, Holtz, Lipshitz,
// Schwartz, SPAA 2012), square n, leading constants taken as 1:
//   memory-dependent  n^w0 / (P M^(w0/2 - 1)),  memory-independent  n^2 / P^(2/w0)
LowerBound strassen_lower_bound(index_t n, int P, double M);

}  // namespace distmm
