#include <mpi.h>
#include <omp.h>

#include "../../cuda/device_info.hpp"
#include "../../mpi/algorithms/algorithm.hpp"
#include "../../mpi/runtime/comm.hpp"
#include "../../mpi/run/run.hpp"
#include "../../node/blas.hpp"
#include "../../node/engine.hpp"
#include "../core/system.hpp"
#include "commands.hpp"

namespace distmm {

int info_command(std::ostream& os, int rank) {
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(lib, &len);
  std::string mpi(lib, len);
  // (Open MPI counts the terminating NUL in len)
  if (auto end = mpi.find_first_of(std::string("\n\0", 2)); end != std::string::npos) mpi.resize(end);
  int P;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  int local = node_local_size();
  if (rank != 0) return 0;
  auto list = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  os << "distmm " << DISTMM_VERSION << "\n"
     << "  build             " << DISTMM_BUILD_TYPE << ", " << DISTMM_COMPILER << ", CUDA "
     << (gpu_support_built() ? "on" : "off") << "\n"
     << "  MPI               " << mpi << "\n"
     << "  ranks             " << P << " (" << local << " on this node)\n"
     << "  BLAS              " << blas_config() << "\n"
     << "  hardware threads  " << hardware_threads() << ", default threads per rank "
     << default_threads() << "\n"
     << "  caches            shared " << shared_cache_bytes() / 1024 << " KiB, per core "
     << core_cache_bytes() / 1024 << " KiB\n"
     << "  memory available  " << available_memory_bytes() / (1 << 20) << " MiB\n"
     << "  GPUs seen         " << gpu_summary() << "\n"
     << "  NCCL              " << nccl_summary() << "\n"
     << "  algorithms        " << list(algorithm_names()) << "\n"
     << "  dtypes            ";
  for (Dtype d : kAllDtypes) {
    const DtypeInfo t = distmm::info(d);
    os << (d == kAllDtypes[0] ? "" : "                    ") << t.name << "  " << t.size
       << " bytes, BLAS " << t.blas_letter << ", NumPy " << t.numpy_descr << ", u = " << t.unit_roundoff
       << "\n";
  }
  os << "  engines\n";
  for (const EngineInfo& e : engine_registry())
    os << "    " << e.name << std::string(e.name.size() < 22 ? 22 - e.name.size() : 1, ' ')
       << (e.memory == Memory::device ? "GPU   " : "host  ") << e.dtypes.names() << "\n";
  return 0;
}

}  // namespace distmm
