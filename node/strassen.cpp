#include "strassen.hpp"

namespace distmm {

std::unique_ptr<Engine> make_strassen_engine(const EngineOptions& o) {
  return std::make_unique<RecursiveEngine<StrassenSchedule>>(o);
}

}  // namespace distmm
