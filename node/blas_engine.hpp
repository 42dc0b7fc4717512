#pragma once
#include "engine.hpp"

namespace distmm {
EngineInfo blas_engine_info();  // `blas`
}  // namespace distmm
