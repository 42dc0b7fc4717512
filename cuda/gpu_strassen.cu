// GPU engines over cuBLAS: `cublas`, and `gpu-strassen`, `gpu-strassen-lowmem`, `gpu-winograd`,
// which run the same schedules as the CPU engines (node/strassen.hpp, strassen_lowmem.hpp,
// winograd.hpp) with a GPU backend: cuBLAS products accumulating into C (beta = 1) and the fused
// multi-output addition kernels of gpu_kernels.cuh, tuned per device (tune.cu). The workspace of
// every depth is one device allocation, reused across calls (seed 001). Leaf products run in the
// cuBLASLt configuration tuned for their size (lt_gemm.cuh), and the independent leaf products
// of a step (Winograd's P1 and P2; P5, P6 and P7; P3 and P4; with one k-half of A ready first,
// gemm_device_pending, P1 and P7 or P2 and P4 go first) on several streams.
// Levels: --levels L, or seed 003's thresholds: below tau1 plain cuBLAS; from tau1 one level, and
// one more for every halving that stays at or above tau2.
#include <cmath>

#include "../node/strassen.hpp"
#include "../node/strassen_lowmem.hpp"
#include "../node/winograd.hpp"
#include "gpu_engine_base.cuh"
#include "gpu_engines.hpp"
#include "gpu_kernels.cuh"
#include "int8_emulation.hpp"
#include "lt_gemm.cuh"

namespace distmm {
namespace {

// cuBLAS's GEMM of element type T.
template <class T>
void cublas_gemm(cublasHandle_t h, Op ta, Op tb, index_t m, index_t n, index_t k, T alpha,
                 const T* A, index_t lda, const T* B, index_t ldb, T beta, T* C, index_t ldc) {
  if (m <= 0 || n <= 0) return;
  const int M = int(m), N = int(n), K = int(k), la = int(std::max<index_t>(lda, 1)),
            lb = int(std::max<index_t>(ldb, 1)), lc = int(std::max<index_t>(ldc, 1));
  const cublasOperation_t oa = cublas_op<T>(ta), ob = cublas_op<T>(tb);
  const auto a = as_cublas(&alpha), b = as_cublas(&beta);
  const auto A_ = as_cublas(A), B_ = as_cublas(B);
  const auto C_ = as_cublas(C);
  if constexpr (std::is_same_v<T, float>) {
    cublas_check(cublasSgemm(h, oa, ob, M, N, K, a, A_, la, B_, lb, b, C_, lc), "sgemm");
  } else if constexpr (std::is_same_v<T, double>) {
    cublas_check(cublasDgemm(h, oa, ob, M, N, K, a, A_, la, B_, lb, b, C_, lc), "dgemm");
  } else if constexpr (std::is_same_v<T, std::complex<float>>) {
    cublas_check(cublasCgemm(h, oa, ob, M, N, K, a, A_, la, B_, lb, b, C_, lc), "cgemm");
  } else {
    static_assert(std::is_same_v<T, std::complex<double>>, "a dtype without a cuBLAS GEMM");
    cublas_check(cublasZgemm(h, oa, ob, M, N, K, a, A_, la, B_, lb, b, C_, lc), "zgemm");
  }
}

// The streams of a recursive engine: the engine's own (index 0) and the side streams that
// independent leaf products fork to, each with its cuBLAS handle.
class StreamSet {
 public:
  StreamSet(cudaStream_t main, cublasHandle_t main_handle, int count) {
    streams_.push_back(main);
    handles_.push_back(main_handle);
    for (int i = 1; i < std::max(count, 1); ++i) {
      own_.push_back(std::make_unique<CudaStream>());
      own_handles_.push_back(std::make_unique<CublasHandle>());
      cublas_check(cublasSetStream(own_handles_.back()->get(), own_.back()->get()), "cublasSetStream");
      streams_.push_back(own_.back()->get());
      handles_.push_back(own_handles_.back()->get());
      done_.push_back(std::make_unique<CudaEvent>());
    }
  }
  int size() const { return int(streams_.size()); }
  cudaStream_t stream(int i) const { return streams_[i]; }
  cublasHandle_t handle(int i) const { return handles_[i]; }
  // Side streams start after the work queued on the main stream so far.
  void fork() {
    cuda_check(cudaEventRecord(forked_.get(), streams_[0]), "event");
    for (int i = 1; i < size(); ++i) cuda_check(cudaStreamWaitEvent(streams_[i], forked_.get(), 0), "wait");
  }
  // The main stream goes on after the side streams' work.
  void join() {
    for (int i = 1; i < size(); ++i) {
      cuda_check(cudaEventRecord(done_[i - 1]->get(), streams_[i]), "event");
      cuda_check(cudaStreamWaitEvent(streams_[0], done_[i - 1]->get(), 0), "wait");
    }
  }

 private:
  std::vector<cudaStream_t> streams_;
  std::vector<cublasHandle_t> handles_;
  std::vector<std::unique_ptr<CudaStream>> own_;
  std::vector<std::unique_ptr<CublasHandle>> own_handles_;
  std::vector<std::unique_ptr<CudaEvent>> done_;
  CudaEvent forked_;
};

struct GpuBackend {
  StreamSet& streams;
  LtGemm* lt;  // tuned leaf products, or null for cuBLAS's own choice
  LaunchShape shape;
  Int8Emulation* emulation = nullptr;  // leaves emulated on INT8 tensor cores, or null
  Dtype dtype = Dtype::f32;            // of the leaves (their tuned tiles)
  ReuseOfA reuse_a{};                  // the caller's, where the one product is the call's own
  bool forked = false;
  int next = 0;  // the stream of the next product inside a fork

  template <class T>
  void gemm(Op ta, Op tb, index_t m, index_t n, index_t k, T alpha, const T* A, index_t lda,
            const T* B, index_t ldb, T beta, T* C, index_t ldc) {
    const int i = forked ? next++ % streams.size() : 0;
    // (Declined leaves, e.g. with NaN inputs, run natively below.)
    if (emulation && emulation->gemm<T>(streams.stream(i), ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, reuse_a))
      return;
    if (lt && lt->run<T>(streams.stream(i), ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc)) return;
    cublas_gemm<T>(streams.handle(i), ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  }
  template <class T, std::size_t NI, std::size_t NO>
  void combine(index_t rows, index_t cols, const std::array<ConstBlock<T>, NI>& in,
               const std::array<MutBlock<T>, NO>& out, const std::array<std::array<T, NI>, NO>& coef) {
    launch_combine<T, int(NI), int(NO)>(rows, cols, in, out, coef, shape, streams.stream(0));
  }
  template <class T>
  void scale(index_t rows, index_t cols, T* p, index_t ld, T s) {
    launch_scale<T>(rows, cols, p, ld, s, streams.stream(0));
  }
  // Concurrent leaves pay off while one product leaves SMs idle (leaves_run_concurrently, with
  // the tiles of the configuration chosen for the leaves; one that cuBLASLt then refuses, for
  // alignment or its plan, runs cuBLAS's pick, paired all the same). Emulated leaves share one
  // workspace, so they stay on one stream.
  void fork(index_t rows, index_t cols, index_t inner) {
    if (emulation || streams.size() < 2) return;
    const auto [tr, tc] = lt ? lt->leaf_tile(dtype, rows, cols, inner) : std::pair<int, int>{0, 0};
    if (!leaves_run_concurrently(rows, cols, tr, tc, lt ? lt->sms() : 0)) return;
    streams.fork();
    forked = true, next = 0;
  }
  void join() {
    if (!forked) return;
    streams.join();
    forked = false;
  }
};

class CublasEngine final : public GpuEngineBase<CublasEngine> {
 public:
  static constexpr DtypeSet kDtypes = DtypeSet::all();
  explicit CublasEngine(const EngineOptions& o) : GpuEngineBase(o, "cublas") {}
  std::string name() const override { return "cublas"; }
  std::string describe() const override { return "cublas (" + device_name_ + ")"; }
  template <class T>
  void device_run(Op ta, Op tb, index_t m, index_t n, index_t k, T alpha, const T* A, index_t lda,
                  const T* B, index_t ldb, T beta, T* C, index_t ldc) {
    cublas_gemm<T>(handle_->get(), ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  }
};

// What an emulation did, for describe(): "INT8 tensor cores, Ozaki scheme II, accuracy native,
// 8 moduli, ..." (ozaki::Tally::text).
std::string emulation_text(const Int8Emulation& e, const std::string& accuracy) {
  return "INT8 tensor cores, Ozaki scheme II, " + e.stats().text(accuracy);
}

// `gpu-ozaki`: every product emulated on INT8 tensor cores at the native routine's accuracy
// (int8_emulation.hpp); products it declines run in cuBLAS.
class OzakiEngine final : public GpuEngineBase<OzakiEngine> {
 public:
  static constexpr DtypeSet kDtypes = DtypeSet::all();
  explicit OzakiEngine(const EngineOptions& o)
      : GpuEngineBase(o, "gpu-ozaki"), emulation_(o.moduli, ozaki::accuracy_or_throw(o.accuracy)) {}
  std::string name() const override { return "gpu-ozaki"; }
  std::string describe() const override {
    return "gpu-ozaki (" + emulation_text(emulation_, ozaki::accuracy_label(o_.accuracy, o_.moduli)) + ", " + device_name_ + ")";
  }
  std::size_t workspace_bytes(index_t m, index_t n, index_t k, Dtype dt) const override {
    return Int8Emulation::workspace_bytes(m, n, k, dt, o_.moduli);
  }
  template <class T>
  void device_run(Op ta, Op tb, index_t m, index_t n, index_t k, T alpha, const T* A, index_t lda,
                  const T* B, index_t ldb, T beta, T* C, index_t ldc) {
    if (!emulation_.gemm<T>(stream(), ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, reuse_a_))
      cublas_gemm<T>(handle_->get(), ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  }

 private:
  Int8Emulation emulation_;
};

template <class Schedule>
class GpuRecursiveEngine final : public GpuEngineBase<GpuRecursiveEngine<Schedule>> {
  using Base = GpuEngineBase<GpuRecursiveEngine<Schedule>>;

 public:
  // Every dtype: complex leaves through cuBLAS, complex additions as real ones (gpu_kernels.cuh).
  static constexpr DtypeSet kDtypes = DtypeSet::all();
  GpuRecursiveEngine(const EngineOptions& o, std::string name, bool emulated)
      : Base(o, name),
        name_(std::move(name)),
        streams_(this->stream(), this->handle_->get(), emulated ? 1 : o.streams),
        lt_(this->device_name_, this->sm_count_),
        emulation_(emulated ? std::make_unique<Int8Emulation>(o.moduli, ozaki::accuracy_or_throw(o.accuracy)) : nullptr) {}
  std::string name() const override { return name_; }
  std::string describe() const override {
    return name_ + " (" + levels_text(this->o_.levels, levels_run_) + ", tau1 " +
           std::to_string(this->o_.tau1) + ", tau2 " + std::to_string(this->o_.tau2) + ", " +
           std::to_string(streams_.size()) + " streams, " +
           (emulation_ ? "leaves on " + emulation_text(*emulation_, ozaki::accuracy_label(this->o_.accuracy, this->o_.moduli))
                       : std::string(this->o_.tuned_leaves ? "tuned" : "cuBLAS's") + " leaf kernels") +
           ", " + this->device_name_ + ")";
  }
  // From the levels that ran, in any call so far, never from those asked for.
  double error_growth() const override { return std::pow(Schedule::kErrorGrowthPerLevel, levels_run_); }
  int levels_run() const override { return levels_run_; }
  // What the distributed algorithms plan with (whole-k products, panel widths, CAPS's steps) is
  // a function of the shape alone, the same on every rank: the threshold levels, which the
  // leaves' fill only lowers (never below one), so the workspace is bounded by theirs.
  bool prefers_whole_k(index_t m, index_t n, index_t k, Dtype dt) const override {
    return threshold_levels(m, n, k, dt) > 0;
  }
  std::size_t workspace_bytes(index_t m, index_t n, index_t k, Dtype dt) const override {
    const int L = threshold_levels(m, n, k, dt);
    const std::size_t leaf = emulation_ ? Int8Emulation::workspace_bytes(m >> L, n >> L, k >> L, dt, this->o_.moduli) : 0;
    return leaf + dispatch(dt, [&](auto tag) { return arena_bytes<typename decltype(tag)::type>(m, n, k, L); });
  }

  void gemm_device_pending(const GemmCall& c, const PartlyReadyA& pending) override {
    this->with_device_args(c, [&](auto... a) { device_run(a..., &pending); });
  }

  template <class T>
  void device_run(Op ta, Op tb, index_t m, index_t n, index_t k, T alpha, const T* A, index_t lda,
                  const T* B, index_t ldb, T beta, T* C, index_t ldc, const PartlyReadyA* pending = nullptr) {
    if (m <= 0 || n <= 0) {
      if (pending) pending->wait_rest();
      return;
    }
    const int levels = levels_for(m, n, k, dtype_of<T>());
    arena_.reserve(arena_bytes<T>(m, n, k, levels));
    if (emulation_) {
      // the levels the recursion will run (it stops where a dimension falls below 2)
      int ran = 0;
      for (index_t d = std::min({m, n, k}); ran < levels && d >= 2; d /= 2) ++ran;
      emulation_->set_levels_above(ran);
    }
    // The additions run on the real component type (complex blocks as real ones of twice the
    // rows), so they take its tuned launch shape.
    using R = real_t<T>;
    const index_t real_rows = m / 2 * index_t(sizeof(T) / sizeof(R));
    GpuBackend be{streams_, this->o_.tuned_leaves ? &lt_ : nullptr,
                  tuned_shape(this->device_name_, DtypeTraits<R>::name, real_rows), emulation_.get(),
                  dtype_of<T>()};
    // No level: the one product is the caller's, on its op(A) (cuboid's parts of B's columns).
    if (levels == 0 && !pending) be.reuse_a = this->reuse_a_;
    Recursion<T, Schedule, GpuBackend> r({levels, 2}, reinterpret_cast<T*>(arena_.get()), be);
    r.gemm({A, lda, ta, m, k}, {B, ldb, tb, k, n}, {C, ldc, m, n}, alpha, beta, pending);
    levels_run_ = std::max(levels_run_, r.levels_run());
  }

 private:
  // Bytes of a real component (complex blocks recurse as real ones).
  static std::size_t real_component_bytes(Dtype dt) { return size_of(dt) / (is_complex(dt) ? 2 : 1); }
  // seed 003's thresholds: none below tau1, one level from there, one more for every halving
  // that stays at or above tau2 (at most 4).
  int threshold_levels(index_t m, index_t n, index_t k, Dtype dt) const {
    if (this->o_.levels >= 0) return this->o_.levels;
    // Emulated leaves pay their passes (statistics, slices, folds, CRT) per leaf, which grow as
    // n^2 against the products' n^3: an f32 level pays off only while the leaves stay at 16384 or
    // more, and an f64 level lost at every size measured, so f64 leaves stay at 32768 or more
    // (docs/performance.md, "Measurements behind the code": threshold_levels).
    const index_t floor = !emulation_ ? 0 : real_component_bytes(dt) == 8 ? 32768 : 16384;
    const index_t tau1 = std::max(this->o_.tau1, 2 * floor), tau2 = std::max(this->o_.tau2, 2 * floor);
    index_t d = std::min({m, n, k});
    if (d < tau1) return 0;
    int L = 1;
    while (L < 4 && d / (index_t(1) << L) >= tau2) ++L;
    return L;
  }
  // The levels a product runs: with tuned leaf kernels, the deepest of the threshold levels
  // whose leaves they fill. A leaf they do not fill runs cuBLAS's own choice, and one level
  // fewer on tuned kernels that fill the waves beat the extra level on cuBLAS's leaves
  // (docs/performance.md, "Measurements behind the code": levels_for).
  int levels_for(index_t m, index_t n, index_t k, Dtype dt) const {
    const int L = threshold_levels(m, n, k, dt);
    if (this->o_.levels >= 0 || L <= 1 || !this->o_.tuned_leaves || emulation_) return L;
    return deepest_fitting_level(L, [&](int l) { return lt_.misfit(dt, m >> l, n >> l, k >> l); });
  }
  template <class T>
  static std::size_t arena_bytes(index_t m, index_t n, index_t k, int levels) {
    return static_cast<std::size_t>(
               Recursion<T, Schedule, GpuBackend>::workspace_elems(m, n, k, levels, 2)) * sizeof(T);
  }
  std::string name_;
  StreamSet streams_;
  LtGemm lt_;
  std::unique_ptr<Int8Emulation> emulation_;  // gpu-*-ozaki: the leaves' emulation
  int levels_run_ = 0;  // the most levels any call has run
  DeviceBuffer<unsigned char> arena_;  // one workspace for every dtype (cudaMalloc: 256-byte aligned)
};

}  // namespace

EngineInfo gpu_tiled_engine_info();  // gpu_tiled.cu

namespace {
template <class E>
EngineInfo gpu_recursive_info(std::string name, std::string summary, bool emulated = false) {
  EngineInfo e{name, std::move(summary), E::kDtypes, Memory::device,
               [name, emulated](const EngineOptions& o) { return std::make_unique<E>(o, name, emulated); }};
  e.recursive = true;
  e.emulated = emulated;
  return e;
}
}  // namespace

std::vector<EngineInfo> gpu_engine_infos() {
  return {EngineInfo{"cublas", "cuBLAS GEMM on one GPU (host operands staged through pinned memory, copies overlapping compute)",
                     CublasEngine::kDtypes, Memory::device,
                     [](const EngineOptions& o) { return std::make_unique<CublasEngine>(o); }},
          gpu_recursive_info<GpuRecursiveEngine<StrassenSchedule>>(
              "gpu-strassen", "Strassen on one GPU: cuBLAS leaf products, fused multi-output CUDA addition kernels"),
          gpu_recursive_info<GpuRecursiveEngine<StrassenLowmemSchedule>>(
              "gpu-strassen-lowmem", "Strassen with two temporaries per level on one GPU, accumulating into C"),
          gpu_recursive_info<GpuRecursiveEngine<WinogradSchedule>>(
              "gpu-winograd", "Strassen-Winograd on one GPU: tuned cuBLASLt leaves on several streams, fused additions"),
          gpu_tiled_engine_info(),
          [] {
            EngineInfo e = engine_entry<OzakiEngine>(
                "gpu-ozaki", "f32/f64/c32/c64 products on INT8 tensor cores at the native accuracy (Ozaki scheme II, moduli from the accuracy rule; cuBLAS where inputs defeat it)",
                Memory::device);
            e.emulated = true;
            return e;
          }(),
          gpu_recursive_info<GpuRecursiveEngine<StrassenSchedule>>(
              "gpu-strassen-ozaki", "Strassen on one GPU with gpu-ozaki's INT8-emulated leaf products", true),
          gpu_recursive_info<GpuRecursiveEngine<WinogradSchedule>>(
              "gpu-winograd-ozaki", "Strassen-Winograd on one GPU with gpu-ozaki's INT8-emulated leaf products", true)};
}

}  // namespace distmm
