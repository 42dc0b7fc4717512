// NCCL, found at run time: the build needs only nccl.h (for the types), and the library is
// opened when first asked for, from wherever this machine keeps it -- $DISTMM_NCCL, the loader's
// path, the CUDA toolkit's lib directories, or the nvidia-nccl wheels of the machine's Pythons
// (how the GPU machines here ship it). A binary built on one machine so runs on another, and a
// machine without NCCL still runs, reporting that GPUs exchange through host memory and MPI.
#pragma once
#include <nccl.h>

#include <string>

namespace distmm {

struct NcclLibrary {
  std::string path;      // the file loaded; empty when none was found
  std::string searched;  // what was tried, in order, for the message
  int version = 0;       // the loaded library's NCCL_VERSION_CODE (e.g. 22809 for 2.28.9)
  decltype(&ncclGetVersion) GetVersion = nullptr;
  decltype(&ncclGetErrorString) GetErrorString = nullptr;
  decltype(&ncclGetUniqueId) GetUniqueId = nullptr;
  decltype(&ncclCommInitRank) CommInitRank = nullptr;
  decltype(&ncclCommDestroy) CommDestroy = nullptr;
  decltype(&ncclBroadcast) Broadcast = nullptr;
  decltype(&ncclAllReduce) AllReduce = nullptr;
  decltype(&ncclReduce) Reduce = nullptr;
  decltype(&ncclReduceScatter) ReduceScatter = nullptr;
  decltype(&ncclAllGather) AllGather = nullptr;
  decltype(&ncclSend) Send = nullptr;
  decltype(&ncclRecv) Recv = nullptr;
  decltype(&ncclGroupStart) GroupStart = nullptr;
  decltype(&ncclGroupEnd) GroupEnd = nullptr;
  bool found() const { return !path.empty(); }
  std::string version_text() const;  // "2.28.9"
};

// The process's NCCL, looked for once (thread-safe).
const NcclLibrary& nccl_library();

}  // namespace distmm
