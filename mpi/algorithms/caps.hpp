#pragma once
#include <memory>
#include <optional>
#include <utility>

#include "algorithm.hpp"

namespace distmm {
// P = m * 7^k with m in 1..6 (the rank counts CAPS takes): {m, k}; none otherwise.
std::optional<std::pair<int, int>> caps_factors(int P);
// Peak words per rank of a CAPS step sequence (caps.cpp): the automatic choice and the report.
double caps_peak_words(GemmShape s, int P, const CapsSteps& steps, const Engine& e, Dtype dt);
// The CAPS schedule (caps.cpp) on P = m * 7^k7 ranks (m alone with dealt steps and no BFS step):
// the plan's choice of steps and formula (caps_plan.cpp, make_caps) built.
std::unique_ptr<DistAlgorithm> make_caps_schedule(const Comm& world, GemmShape s, int m, int k7, const CapsSteps& steps,
                                                  const BilinearFormula& f, bool device_resident);
}  // namespace distmm
