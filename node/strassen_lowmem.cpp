#include "strassen_lowmem.hpp"

namespace distmm {

std::unique_ptr<Engine> make_strassen_lowmem_engine(const EngineOptions& o) {
  return std::make_unique<RecursiveEngine<StrassenLowmemSchedule>>(o);
}

}  // namespace distmm
