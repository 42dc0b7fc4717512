#pragma once
#include "algorithm.hpp"

namespace distmm {
// Peak words per rank of a CAPS step sequence (caps.cpp): the automatic choice and the report.
double caps_peak_words(GemmShape s, int P, const CapsSteps& steps, const Engine& e, Dtype dt);
}  // namespace distmm
