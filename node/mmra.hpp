#pragma once
#include "engine.hpp"

namespace distmm {
// mmra-shared, mmra-distributed, mmra-tradeoff and their -lru variants (mmra.cpp).
std::unique_ptr<Engine> make_mmra_engine(const std::string& name, const EngineOptions& opts);
// outer-product and equal-layout (tiling_references.cpp).
std::unique_ptr<Engine> make_reference_tiling_engine(const std::string& name, const EngineOptions& opts);
}  // namespace distmm
