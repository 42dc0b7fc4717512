// Communication lower bounds per rank, in words, for the report and the docs.
#pragma once
#include <string>

#include "../../src/core/types.hpp"

namespace distmm {

struct LowerBound {
  double words = 0;
  std::string which;  // the formula that gave the larger bound
};

// Classical O(mnk) multiplication on P ranks with M words of memory each:
//   memory-dependent (Irony, Toledo & Tiskin 2004):  mnk / (2 sqrt(2) P sqrt(M)) - M
//   memory-independent for the actual shape (Demmel et al. IPDPS 2013's three cases on the
//   sorted dimensions, constants of Al Daas et al. 2022; bounds.cpp states them):
//     square-ish: 3 (mnk / P)^(2/3) - (mn + mk + nk) / P, and the one- and two-large-dimension
//     forms for skewed shapes, so the bound is positive whenever data must move
LowerBound classical_lower_bound(index_t m, index_t n, index_t k, int P, double M);

// Strassen-like multiplication with exponent w0 = log2 7 (Ballard, Demmel, Holtz, Lipshitz,
// Schwartz, SPAA 2012), square n, leading constants taken as 1:
//   memory-dependent  n^w0 / (P M^(w0/2 - 1)),  memory-independent  n^2 / P^(2/w0)
LowerBound strassen_lower_bound(index_t n, int P, double M);

}  // namespace distmm
