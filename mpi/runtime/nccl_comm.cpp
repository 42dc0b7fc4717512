#include "nccl_comm.hpp"

#include <stdexcept>

#include "../../cuda/device_info.hpp"

namespace distmm {

NcclComm::NcclComm(const Comm& comm) : rank_(comm.rank()), size_(comm.size()) {
  // Every rank says whether it can join; all leave together when one cannot.
  const bool have_lib = lib().found();
  const bool have_gpu = gpu_count() > 0;
  int ok = have_lib && have_gpu ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm.get());
  if (!ok)
    comm.agree(std::string("NCCL between GPUs needs NCCL and a GPU on every rank: ") +
               (have_lib ? "" : "NCCL " + nccl_summary() + "; ") +
               (have_gpu ? "" : "no GPU on this rank (" + gpu_summary() + "); ") +
               "use a host engine, or set DISTMM_NCCL to libnccl.so.2");
  ncclUniqueId id{};
  if (rank_ == 0) check(lib().GetUniqueId(&id), "ncclGetUniqueId");
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm.get());
  check(lib().CommInitRank(&comm_, size_, id, rank_), "ncclCommInitRank");
}

NcclComm::~NcclComm() {
  if (comm_) lib().CommDestroy(comm_);
}

void NcclComm::check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess)
    throw std::runtime_error(std::string(what) + ": " + (lib().GetErrorString ? lib().GetErrorString(r) : "NCCL error"));
}

}  // namespace distmm
