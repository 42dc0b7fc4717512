#include "strassen.hpp"

namespace distmm {

EngineInfo strassen_engine_info() {
  return recursive_engine_info<StrassenSchedule>("Strassen (7 products, 18 additions) over BLAS; the five sums of each operand in one fused pass");
}

}  // namespace distmm
