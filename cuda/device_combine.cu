#include "device_combine.hpp"

#include <stdexcept>
#include <utility>

#include "../src/core/dtype.hpp"
#include "gpu_kernels.cuh"

namespace distmm {
namespace {

template <class T, int NI, int NO>
void launch(index_t n, const std::array<const T*, 4>& in, const std::array<T*, 4>& out,
            const std::array<std::array<int, 4>, 4>& coef, const std::array<bool, 4>& accumulate, cudaStream_t s) {
  std::array<ConstBlock<T>, NI> i;
  std::array<MutBlock<T>, NO> o;
  std::array<std::array<T, NI>, NO> c;
  for (int t = 0; t < NI; ++t) i[t] = {in[t], n};
  for (int u = 0; u < NO; ++u) {
    o[u] = {out[u], n, accumulate[u]};
    for (int t = 0; t < NI; ++t) c[u][t] = T(coef[u][t]);
  }
  launch_combine<T, NI, NO>(n, 1, i, o, c, LaunchShape{}, s);
}

// f(integral_constant<int, v>) for a run-time v in 1..4.
template <class F>
void with_count(int v, F&& f) {
  switch (v) {
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    case 3: return f(std::integral_constant<int, 3>{});
    case 4: return f(std::integral_constant<int, 4>{});
    default: throw std::logic_error("combine_device: 1 to 4 blocks on each side");
  }
}

}  // namespace

template <class T>
void combine_device(index_t n, int n_in, const std::array<const T*, 4>& in, int n_out, const std::array<T*, 4>& out,
                    const std::array<std::array<int, 4>, 4>& coef, const std::array<bool, 4>& accumulate,
                    cudaStream_t stream) {
  if (n <= 0) return;
  if (n_in > 1 && n_out > 1) throw std::logic_error("combine_device: many inputs or many outputs, not both");
  if (n_out == 1)
    with_count(n_in, [&](auto ni) { launch<T, decltype(ni)::value, 1>(n, in, out, coef, accumulate, stream); });
  else
    with_count(n_out, [&](auto no) { launch<T, 1, decltype(no)::value>(n, in, out, coef, accumulate, stream); });
}

#define DISTMM_COMBINE_DEVICE(T)                                                                             \
  template void combine_device<T>(index_t, int, const std::array<const T*, 4>&, int, const std::array<T*, 4>&, \
                                  const std::array<std::array<int, 4>, 4>&, const std::array<bool, 4>&, cudaStream_t);
DISTMM_FOR_EACH_TYPE(DISTMM_COMBINE_DEVICE)
#undef DISTMM_COMBINE_DEVICE

}  // namespace distmm
