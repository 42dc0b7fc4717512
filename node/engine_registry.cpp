#include <functional>
#include <map>

#include "../cuda/gpu_engines.hpp"
#include "blas_engine.hpp"
#include "mmra.hpp"
#include "strassen.hpp"
#include "strassen_lowmem.hpp"
#include "winograd.hpp"
#include "engine.hpp"

namespace distmm {
namespace {

using Factory = std::function<std::unique_ptr<Engine>(const EngineOptions&)>;

const std::map<std::string, Factory>& registry() {
  static const std::map<std::string, Factory> r = [] {
    std::map<std::string, Factory> m;
    m["blas"] = make_blas_engine;
    m["strassen"] = make_strassen_engine;
    m["strassen-lowmem"] = make_strassen_lowmem_engine;
    m["winograd"] = make_winograd_engine;
    for (const char* t : {"mmra-shared", "mmra-distributed", "mmra-tradeoff", "mmra-shared-lru",
                          "mmra-distributed-lru", "mmra-tradeoff-lru"})
      m[t] = [name = std::string(t)](const EngineOptions& o) { return make_mmra_engine(name, o); };
    for (const std::string& t : gpu_engine_names())  // present when CUDA is built
      m[t] = [t](const EngineOptions& o) { return make_gpu_engine(t, o); };
    for (const char* t : {"outer-product", "equal-layout"})
      m[t] = [name = std::string(t)](const EngineOptions& o) {
        return make_reference_tiling_engine(name, o);
      };
    return m;
  }();
  return r;
}

}  // namespace

std::vector<std::string> engine_names() {
  std::vector<std::string> names;
  for (const auto& [k, v] : registry()) names.push_back(k);
  return names;
}

std::unique_ptr<Engine> make_engine(const std::string& name, const EngineOptions& opts) {
  auto it = registry().find(name);
  if (it == registry().end()) {
    std::string known;
    for (const auto& n : engine_names()) known += (known.empty() ? "" : ", ") + n;
    throw UsageError("unknown engine '" + name + "': use one of " + known);
  }
  return it->second(opts);
}

}  // namespace distmm
