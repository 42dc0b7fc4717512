#include "nccl_library.hpp"

#include <dlfcn.h>
#include <glob.h>

#include <cstdlib>
#include <vector>

#include "../src/core/settings.hpp"
#include "device_info.hpp"

namespace distmm {
namespace {

// Where to look, in order: an explicit file, the dynamic loader's own path (LD_LIBRARY_PATH,
// ld.so.cache), the CUDA toolkit, then Python wheels (nvidia-nccl-cu*), newest Python first.
std::vector<std::string> candidates() {
  std::vector<std::string> v;
  if (const std::string explicit_path = settings().nccl; !explicit_path.empty()) v.push_back(explicit_path);
  v.push_back("libnccl.so.2");
  for (const char* dir : {"/usr/local/cuda/lib", "/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib"})
    v.push_back(std::string(dir) + "/libnccl.so.2");
  std::vector<std::string> patterns = {"/usr/lib/python3*/*-packages/nvidia/nccl/lib/libnccl.so.2",
                                       "/usr/local/lib/python3*/*-packages/nvidia/nccl/lib/libnccl.so.2",
                                       "/opt/*/lib/python3*/*-packages/nvidia/nccl/lib/libnccl.so.2"};
  if (const char* home = environment("HOME"))
    patterns.push_back(std::string(home) + "/.local/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2");
  for (const std::string& pat : patterns) {
    glob_t g{};
    if (::glob(pat.c_str(), 0, nullptr, &g) == 0)
      for (std::size_t i = g.gl_pathc; i-- > 0;) v.push_back(g.gl_pathv[i]);
    ::globfree(&g);
  }
  return v;
}

template <class F>
bool bind(void* h, F& fn, const char* name) {
  fn = reinterpret_cast<F>(::dlsym(h, name));
  return fn != nullptr;
}

NcclLibrary load() {
  NcclLibrary lib;
  for (const std::string& c : candidates()) {
    lib.searched += (lib.searched.empty() ? "" : ", ") + c;
    void* h = ::dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) continue;
    bool ok = bind(h, lib.GetVersion, "ncclGetVersion") && bind(h, lib.GetErrorString, "ncclGetErrorString") &&
              bind(h, lib.GetUniqueId, "ncclGetUniqueId") && bind(h, lib.CommInitRank, "ncclCommInitRank") &&
              bind(h, lib.CommDestroy, "ncclCommDestroy") && bind(h, lib.Broadcast, "ncclBroadcast") &&
              bind(h, lib.AllReduce, "ncclAllReduce") && bind(h, lib.Reduce, "ncclReduce") && bind(h, lib.ReduceScatter, "ncclReduceScatter") &&
              bind(h, lib.AllGather, "ncclAllGather") && bind(h, lib.Send, "ncclSend") &&
              bind(h, lib.Recv, "ncclRecv") && bind(h, lib.GroupStart, "ncclGroupStart") &&
              bind(h, lib.GroupEnd, "ncclGroupEnd");
    if (ok && lib.GetVersion(&lib.version) == ncclSuccess) {
      char real[4096];
      lib.path = c;
      if (Dl_info info{}; ::dladdr(reinterpret_cast<void*>(lib.GetVersion), &info) && info.dli_fname)
        lib.path = ::realpath(info.dli_fname, real) ? real : info.dli_fname;
      return lib;  // (the handle stays open for the process's life)
    }
    ::dlclose(h);
    lib = NcclLibrary{{}, lib.searched};
  }
  return lib;
}

}  // namespace

std::string NcclLibrary::version_text() const {
  // NCCL_VERSION_CODE = major * 10000 + minor * 100 + patch (from 2.9 on)
  return std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
         std::to_string(version % 100);
}

const NcclLibrary& nccl_library() {
  static const NcclLibrary lib = load();
  return lib;
}

std::string nccl_summary() {
  const NcclLibrary& l = nccl_library();
  if (l.found()) return "NCCL " + l.version_text() + " (" + l.path + ")";
  return "not found (searched " + l.searched +
         "; set DISTMM_NCCL to the library): GPUs would exchange through host memory with MPI";
}

}  // namespace distmm
