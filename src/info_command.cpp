#include <mpi.h>
#include <omp.h>

#include "../cuda/device_info.hpp"
#include "../mpi/algorithm.hpp"
#include "../mpi/comm.hpp"
#include "../node/blas.hpp"
#include "../node/engine.hpp"
#include "commands.hpp"
#include "run_command.hpp"
#include "system.hpp"

namespace distmm {

int info_command(std::ostream& os, int rank) {
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(lib, &len);
  std::string mpi(lib, len);
  if (auto nl = mpi.find('\n'); nl != std::string::npos) mpi.resize(nl);
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
     << "  algorithms        " << list(algorithm_names()) << "\n"
     << "  engines           " << list(engine_names()) << "\n";
  return 0;
}

}  // namespace distmm
