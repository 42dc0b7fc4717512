#pragma once
#include <optional>
#include <utility>

#include "algorithm.hpp"

namespace distmm {
// P = m * 7^k with m in 1..6 (the rank counts CAPS takes): {m, k}; none otherwise.
std::optional<std::pair<int, int>> caps_factors(int P);
// Peak words per rank of a CAPS step sequence (caps.cpp): the automatic choice and the report.
double caps_peak_words(GemmShape s, int P, const CapsSteps& steps, const Engine& e, Dtype dt);
}  // namespace distmm
