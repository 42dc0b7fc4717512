#pragma once
#include "engine.hpp"

namespace distmm {
std::unique_ptr<Engine> make_strassen_engine(const EngineOptions& opts);
}
