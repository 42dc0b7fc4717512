#pragma once
#include "engine.hpp"

namespace distmm {
EngineInfo ozaki_engine_info();  // `ozaki`: the host twin of gpu-ozaki
}  // namespace distmm
