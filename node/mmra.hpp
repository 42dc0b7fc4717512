#pragma once
#include <vector>

#include "engine.hpp"

namespace distmm {
// mmra-shared, mmra-distributed, mmra-tradeoff and their -lru variants (mmra.cpp).
std::vector<EngineInfo> mmra_engine_infos();
// outer-product and equal-layout (tiling_references.cpp).
std::vector<EngineInfo> reference_tiling_engine_infos();
}  // namespace distmm
