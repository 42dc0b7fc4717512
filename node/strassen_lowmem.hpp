#pragma once
#include "engine.hpp"

namespace distmm {
std::unique_ptr<Engine> make_strassen_lowmem_engine(const EngineOptions& opts);
}
