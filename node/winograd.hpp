#pragma once
#include "engine.hpp"

namespace distmm {
std::unique_ptr<Engine> make_winograd_engine(const EngineOptions& opts);
}
