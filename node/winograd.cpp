#include "winograd.hpp"

namespace distmm {

std::unique_ptr<Engine> make_winograd_engine(const EngineOptions& o) {
  return std::make_unique<RecursiveEngine<WinogradSchedule>>(o);
}

}  // namespace distmm
