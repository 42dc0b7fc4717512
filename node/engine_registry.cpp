// The one registry of engines, CPU and GPU: each engine file contributes its entries (name,
// dtypes, memory, factory) and this list is all that `--engine`, `distmm info` and the help
// text read. The GPU entries come from cuda/ when it is built (cuda/gpu_none.cpp otherwise).
#include <stdexcept>

#include "../cuda/gpu_engines.hpp"
#include "blas_engine.hpp"
#include "engine.hpp"
#include "mmra.hpp"
#include "ozaki_engine.hpp"
#include "strassen.hpp"
#include "strassen_lowmem.hpp"
#include "winograd.hpp"

namespace distmm {

const std::vector<EngineInfo>& engine_registry() {
  static const std::vector<EngineInfo> r = [] {
    std::vector<EngineInfo> v{blas_engine_info(), strassen_engine_info(), strassen_lowmem_engine_info(),
                              winograd_engine_info(), ozaki_engine_info()};
    for (auto* group : {mmra_engine_infos, reference_tiling_engine_infos, gpu_engine_infos})
      for (EngineInfo& e : group()) v.push_back(std::move(e));
    return v;
  }();
  return r;
}

std::vector<std::string> engine_names() {
  std::vector<std::string> names;
  for (const auto& e : engine_registry()) names.push_back(e.name);
  return names;
}

const EngineInfo& engine_info(const std::string& name) {
  for (const auto& e : engine_registry())
    if (e.name == name) return e;
  std::string known;
  for (const auto& n : engine_names()) known += (known.empty() ? "" : ", ") + n;
  throw UsageError("unknown engine '" + name + "': use one of " + known);
}

std::unique_ptr<Engine> make_engine(const std::string& name, const EngineOptions& opts) {
  return engine_info(name).make(opts);
}

void Engine::gemm_device_call(const GemmCall&) {
  throw std::logic_error("engine '" + name() + "' computes in host memory: it has no device gemm");
}

void throw_unsupported_dtype(const std::string& engine, DtypeSet supported, Dtype d) {
  throw UsageError("engine '" + engine + "' supports " + supported.names() + ", not " +
                   to_string(d) + ": use --engine blas or another dtype");
}

}  // namespace distmm
