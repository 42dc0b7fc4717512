// Leaf products through cuBLASLt in the configuration that `distmm tune` timed fastest for the
// leaf size (seed 000's Algorithm 1 applied to the products: candidates from the library's own
// list, the survivors timed, the best cached per device, dtype and size). cuBLAS's heuristic
// picks one kernel per shape, which at the leaf sizes of a Strassen recursion (2048-4096) is not
// always the fastest one the device has. A shape the tuned configuration does not support, or
// no tuned configuration at all, reports false and the caller uses plain cuBLAS. Complex
// products always report false: `distmm tune` times real ones only.
#pragma once
#include <cublasLt.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "../src/core/types.hpp"
#include "cuda_util.hpp"
#include "tuning.hpp"

namespace distmm {

template <class T>
constexpr cudaDataType lt_type() {
  constexpr bool single = std::is_same_v<real_t<T>, float>;
  if constexpr (is_complex_v<T>) return single ? CUDA_C_32F : CUDA_C_64F;
  else return single ? CUDA_R_32F : CUDA_R_64F;
}
template <class T>
constexpr cublasComputeType_t lt_compute() {
  return std::is_same_v<real_t<T>, float> ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_64F;
}

// The types of one kind of cuBLASLt product: compute, scale (alpha, beta), A and B, C and D.
// The leaf products are T x T -> T; the emulation's INT8 products int8 x int8 -> int32 sums.
struct LtTypes {
  cublasComputeType_t compute;
  cudaDataType scale, ab, cd;
};
template <class T>
constexpr LtTypes lt_types() {
  return {lt_compute<T>(), lt_type<T>(), lt_type<T>(), lt_type<T>()};
}
constexpr LtTypes kLtInt8{CUBLAS_COMPUTE_32I, CUDA_R_32I, CUDA_R_8I, CUDA_R_32I};
// The INT8 emulation's cuBLASLt workspace: the heuristic's INT8 kernels may use one, and so
// may a tuned configuration ("i8").
constexpr std::size_t kInt8LtWorkspace = 32u << 20;

struct LtDescDeleter {
  void operator()(cublasLtMatmulDescOpaque_t* d) const { cublasLtMatmulDescDestroy(d); }
  void operator()(cublasLtMatrixLayoutOpaque_t* l) const { cublasLtMatrixLayoutDestroy(l); }
};
using LtMatmulDesc = std::unique_ptr<cublasLtMatmulDescOpaque_t, LtDescDeleter>;
using LtLayout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, LtDescDeleter>;

inline LtLayout lt_layout(cudaDataType t, index_t rows, index_t cols, index_t ld) {
  cublasLtMatrixLayout_t l = nullptr;
  cublas_check(cublasLtMatrixLayoutCreate(&l, t, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols),
                                          static_cast<int64_t>(ld)),
               "cublasLtMatrixLayoutCreate");
  return LtLayout(l);
}

// The algorithm of an id (lt_algo_init), with a configuration's attributes (lt_algo); false when
// this cuBLASLt does not know the id.
inline bool lt_algo_init(cublasLtHandle_t h, const LtTypes& t, int id, cublasLtMatmulAlgo_t& algo) {
  return cublasLtMatmulAlgoInit(h, t.compute, t.scale, t.ab, t.ab, t.cd, t.cd, id, &algo) == CUBLAS_STATUS_SUCCESS;
}
inline bool lt_algo(cublasLtHandle_t h, const LtTypes& t, const GemmConfig& c, cublasLtMatmulAlgo_t& algo) {
  if (!lt_algo_init(h, t, c.algo, algo)) return false;
  const int splitk = 1;
  cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &c.tile, sizeof(int));
  cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &c.stages, sizeof(int));
  cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &c.swizzle, sizeof(int));
  cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &c.custom, sizeof(int));
  cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &c.cluster, sizeof(int));
  cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof(int));
  return true;
}

// Rows x columns of C that one thread block of a cuBLASLt tile id computes; {0, 0} for an id
// not listed (its fill is then not judged).
inline std::pair<int, int> lt_tile_shape(int tile) {
  switch (tile) {
    case CUBLASLT_MATMUL_TILE_64x64: return {64, 64};
    case CUBLASLT_MATMUL_TILE_64x128: return {64, 128};
    case CUBLASLT_MATMUL_TILE_128x64: return {128, 64};
    case CUBLASLT_MATMUL_TILE_64x256: return {64, 256};
    case CUBLASLT_MATMUL_TILE_128x128: return {128, 128};
    case CUBLASLT_MATMUL_TILE_256x64: return {256, 64};
    case CUBLASLT_MATMUL_TILE_128x256: return {128, 256};
    case CUBLASLT_MATMUL_TILE_256x128: return {256, 128};
    case CUBLASLT_MATMUL_TILE_128x192: return {128, 192};
    case CUBLASLT_MATMUL_TILE_192x128: return {192, 128};
    case CUBLASLT_MATMUL_TILE_128x96: return {128, 96};
    case CUBLASLT_MATMUL_TILE_96x128: return {96, 128};
    default: return {0, 0};
  }
}

// One product shape, described once: the descriptors, the algorithm, the workspace it needs and
// whether the configuration applies.
struct LtPlan {
  LtMatmulDesc desc;
  LtLayout a, b, c;
  cublasLtMatmulAlgo_t algo{};
  std::size_t workspace = 0;
  bool ok = false;
  double ms = 0;  // the time measured for it where its user timed it (0: not timed)
};

// Sets p.algo to configuration `cfg` and p.ok to whether cuBLASLt runs it on p's descriptors
// within `max_workspace` bytes (p.workspace: what it needs).
inline void lt_apply(cublasLtHandle_t h, const LtTypes& t, const GemmConfig& cfg, std::size_t max_workspace,
                     LtPlan& p) {
  p.ok = false;
  if (!lt_algo(h, t, cfg, p.algo)) return;
  cublasLtMatmulHeuristicResult_t r{};
  p.ok = cublasLtMatmulAlgoCheck(h, p.desc.get(), p.a.get(), p.b.get(), p.c.get(), p.c.get(), &p.algo, &r) ==
             CUBLAS_STATUS_SUCCESS &&
         r.workspaceSize <= max_workspace;
  p.workspace = r.workspaceSize;
}

// The descriptors of the INT8 emulation's products (no configuration yet): C (rows x cols, int32
// sums) = A^T B, A Kp x rows and B Kp x cols int8, k-contiguous (the "TN" layout INT8 GEMMs want).
// (ld: the operands' leading dimension, Kp where 0; a larger one reads quadrants in place)
inline LtPlan lt_int8_plan(index_t rows, index_t cols, index_t Kp, index_t ld = 0) {
  if (ld == 0) ld = Kp;
  LtPlan p;
  cublasLtMatmulDesc_t d = nullptr;
  cublas_check(cublasLtMatmulDescCreate(&d, kLtInt8.compute, kLtInt8.scale), "cublasLtMatmulDescCreate");
  p.desc.reset(d);
  const cublasOperation_t t = CUBLAS_OP_T, nn = CUBLAS_OP_N;
  cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t);
  cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSB, &nn, sizeof nn);
  p.a = lt_layout(kLtInt8.ab, Kp, rows, ld);
  p.b = lt_layout(kLtInt8.ab, Kp, cols, ld);
  p.c = lt_layout(kLtInt8.cd, rows, cols, rows);
  return p;
}

// cuBLASLt's heuristic choices for a plan's descriptors, best first, within `max_workspace`
// bytes (at most `count`; none when it has none).
inline std::vector<cublasLtMatmulHeuristicResult_t> lt_heuristic(cublasLtHandle_t h, const LtPlan& p, int count,
                                                                 std::size_t max_workspace) {
  cublasLtMatmulPreference_t pref = nullptr;
  cublas_check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_workspace,
                                       sizeof max_workspace);
  std::vector<cublasLtMatmulHeuristicResult_t> r(static_cast<std::size_t>(count));
  int found = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(h, p.desc.get(), p.a.get(), p.b.get(), p.c.get(),
                                                           p.c.get(), pref, count, r.data(), &found);
  cublasLtMatmulPreferenceDestroy(pref);
  r.resize(st == CUBLAS_STATUS_SUCCESS ? static_cast<std::size_t>(found) : 0);
  return r;
}

template <class T>
LtPlan lt_plan(cublasLtHandle_t h, const GemmConfig& cfg, Op ta, Op tb, index_t m, index_t n,
               index_t k, index_t lda, index_t ldb, index_t ldc) {
  LtPlan p;
  cublasLtMatmulDesc_t d = nullptr;
  cublas_check(cublasLtMatmulDescCreate(&d, lt_compute<T>(), lt_type<T>()), "cublasLtMatmulDescCreate");
  p.desc.reset(d);
  const cublasOperation_t oa = cublas_op<T>(ta);
  const cublasOperation_t ob = cublas_op<T>(tb);
  cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &oa, sizeof oa);
  cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSB, &ob, sizeof ob);
  p.a = ta == Op::N ? lt_layout(lt_type<T>(), m, k, lda) : lt_layout(lt_type<T>(), k, m, lda);
  p.b = tb == Op::N ? lt_layout(lt_type<T>(), k, n, ldb) : lt_layout(lt_type<T>(), n, k, ldb);
  p.c = lt_layout(lt_type<T>(), m, n, ldc);
  lt_apply(h, lt_types<T>(), cfg, 0, p);  // the leaves run without a workspace
  return p;
}

class LtGemm {
 public:
  LtGemm(std::string device, int sms) : device_(std::move(device)), sms_(sms) {}

  // Whether an m x n x k leaf of this dtype has a tuned configuration for its size that it does
  // not fill: such a leaf runs cuBLAS's own choice (run()), and gpu-winograd's automatic levels
  // prefer a level whose leaves the tuned kernels fit.
  bool misfit(Dtype dt, index_t m, index_t n, index_t k) const {
    if (dt != Dtype::f32 && dt != Dtype::f64) return false;  // complex leaves: cuBLAS always
    if (m <= 0 || n <= 0 || k <= 0) return false;
    return choose(to_string(dt), m, n, k).misfit;
  }

  // The tile (rows x columns of C per thread block) that an m x n x k leaf of this dtype runs
  // with; {0, 0} where cuBLAS chooses (not known here). Asked at every group of leaves (the
  // engine's fork), so kept per shape instead of looked up in the tuning file each time.
  std::pair<int, int> leaf_tile(Dtype dt, index_t m, index_t n, index_t k) const {
    if (dt != Dtype::f32 && dt != Dtype::f64) return {0, 0};
    if (m <= 0 || n <= 0 || k <= 0) return {0, 0};
    const auto key = std::make_tuple(static_cast<int>(dt), m, n, k);
    auto it = tiles_.find(key);
    if (it == tiles_.end()) {
      const std::optional<GemmConfig> c = choose(to_string(dt), m, n, k).config;
      it = tiles_.emplace(key, c ? lt_tile_shape(c->tile) : std::pair<int, int>{0, 0}).first;
    }
    return it->second;
  }
  int sms() const { return sms_; }

  // C = alpha op(A) op(B) + beta C on `stream` in the tuned configuration; false (nothing done)
  // when there is none for this size or it does not support this shape.
  template <class T>
  bool run(cudaStream_t stream, Op ta, Op tb, index_t m, index_t n, index_t k, T alpha, const T* A,
           index_t lda, const T* B, index_t ldb, T beta, T* C, index_t ldc) {
    if constexpr (is_complex_v<T>) {
      (void)stream, (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)alpha, (void)A, (void)lda;
      (void)B, (void)ldb, (void)beta, (void)C, (void)ldc;
      return false;  // no tuned complex configurations: cuBLAS
    } else {
      return run_real<T>(stream, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    }
  }

 private:
  template <class T>
  bool run_real(cudaStream_t stream, Op ta, Op tb, index_t m, index_t n, index_t k, T alpha,
                const T* A, index_t lda, const T* B, index_t ldb, T beta, T* C, index_t ldc) {
    if (m <= 0 || n <= 0 || k <= 0) return false;
    auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
    if (!aligned(A) || !aligned(B) || !aligned(C)) return false;
    const Op ea = effective_op<T>(ta), eb = effective_op<T>(tb);
    const auto key = std::make_tuple(int(dtype_of<T>()), int(ea), int(eb), m, n, k, lda, ldb, ldc);
    auto it = plans_.find(key);
    if (it == plans_.end()) {
      const std::optional<GemmConfig> cfg = choose(DtypeTraits<T>::name, m, n, k).config;
      LtPlan p;
      if (cfg) p = lt_plan<T>(handle_.get(), *cfg, ta, tb, m, n, k, lda, ldb, ldc);
      it = plans_.emplace(key, std::move(p)).first;
    }
    LtPlan& p = it->second;
    if (!p.ok) return false;
    if (cublasLtMatmul(handle_.get(), p.desc.get(), &alpha, A, p.a.get(), B, p.b.get(), &beta, C,
                       p.c.get(), C, p.c.get(), &p.algo, nullptr, 0, stream) != CUBLAS_STATUS_SUCCESS) {
      p.ok = false;  // refused at run time (alignment): cuBLAS from now on
      return false;
    }
    return true;
  }

  LeafChoice choose(const std::string& dtype, index_t m, index_t n, index_t k) const {
    return tuned_config(device_, dtype, m, n, k, sms_, lt_tile_shape);
  }

  std::string device_;
  int sms_;
  LtHandle handle_;
  std::map<std::tuple<int, int, int, index_t, index_t, index_t, index_t, index_t, index_t>, LtPlan> plans_;
  mutable std::map<std::tuple<int, index_t, index_t, index_t>, std::pair<int, int>> tiles_;  // leaf_tile's
};

}  // namespace distmm
