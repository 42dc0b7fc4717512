#include "strassen_lowmem.hpp"

namespace distmm {

EngineInfo strassen_lowmem_engine_info() {
  return recursive_engine_info<StrassenLowmemSchedule>("Strassen with two temporaries per level, accumulating into C (Bailey's bound)");
}

}  // namespace distmm
