#include "winograd.hpp"

namespace distmm {

EngineInfo winograd_engine_info() {
  return recursive_engine_info<WinogradSchedule>("Strassen-Winograd (15 additions) over BLAS, fused multi-output passes");
}

}  // namespace distmm
