// GPU engines over cuBLAS: `cublas`, and `gpu-strassen`, `gpu-strassen-lowmem`, `gpu-winograd`,
// which run the same schedules as the CPU engines (node/strassen.hpp, strassen_lowmem.hpp,
// winograd.hpp) with a GPU backend: cuBLAS products accumulating into C (beta = 1) and the fused
// multi-output addition kernels of gpu_kernels.cuh, tuned per device (tune.cu). The workspace of
// every depth is one device allocation, reused across calls (seed 001). Leaf products run in the
// cuBLASLt configuration tuned for their size (lt_gemm.cuh), and the independent leaf products
// of a step (Winograd's P1 and P2; P5, P6 and P7; P3 and P4) on several streams.
// Levels: --levels L, or seed 003's thresholds: below tau1 plain cuBLAS; from tau1 one level, and
// one more for every halving that stays at or above tau2.
#include <cmath>

#include "../node/strassen.hpp"
#include "../node/strassen_lowmem.hpp"
#include "../node/winograd.hpp"
#include "gpu_engine_base.cuh"
#include "gpu_engines.hpp"
#include "gpu_kernels.cuh"
#include "lt_gemm.cuh"

namespace distmm {
namespace {

template <class T>
void cublas_gemm(cublasHandle_t h, Op ta, Op tb, index_t m, index_t n, index_t k, T alpha,
                 const T* A, index_t lda, const T* B, index_t ldb, T beta, T* C, index_t ldc) {
  if (m <= 0 || n <= 0) return;
  const int M = int(m), N = int(n), K = int(k), la = int(std::max<index_t>(lda, 1)),
            lb = int(std::max<index_t>(ldb, 1)), lc = int(std::max<index_t>(ldc, 1));
  if constexpr (std::is_same_v<T, float>)
    cublas_check(cublasSgemm(h, cublas_op(ta), cublas_op(tb), M, N, K, &alpha, A, la, B, lb, &beta, C, lc), "sgemm");
  else
    cublas_check(cublasDgemm(h, cublas_op(ta), cublas_op(tb), M, N, K, &alpha, A, la, B, lb, &beta, C, lc), "dgemm");
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
  bool forked = false;
  int next = 0;  // the stream of the next product inside a fork

  template <class T>
  void gemm(Op ta, Op tb, index_t m, index_t n, index_t k, T alpha, const T* A, index_t lda,
            const T* B, index_t ldb, T beta, T* C, index_t ldc) {
    const int i = forked ? next++ % streams.size() : 0;
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
  // Concurrent leaves pay off while one product leaves SMs idle: at 1024^2 outputs a product
  // has a third of a wave of 256 x 128 tiles on an H100 and two streams run 8192^3 at 3 levels
  // 16% faster; from 2048^2 on (a full wave) the measured gain is nil (docs/performance.md).
  void fork(index_t rows, index_t cols, index_t) {
    if (streams.size() < 2 || rows * cols >= index_t(2048) * 2048) return;
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
  explicit CublasEngine(const EngineOptions& o) : GpuEngineBase(o, "cublas") {}
  std::string name() const override { return "cublas"; }
  std::string describe() const override { return "cublas (" + device_name_ + ")"; }
  template <class T>
  void device_run(Op ta, Op tb, index_t m, index_t n, index_t k, T alpha, const T* A, index_t lda,
                  const T* B, index_t ldb, T beta, T* C, index_t ldc) {
    cublas_gemm<T>(handle_->get(), ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  }
};

template <class Schedule>
class GpuRecursiveEngine final : public GpuEngineBase<GpuRecursiveEngine<Schedule>> {
  using Base = GpuEngineBase<GpuRecursiveEngine<Schedule>>;

 public:
  GpuRecursiveEngine(const EngineOptions& o, std::string name)
      : Base(o, name),
        name_(std::move(name)),
        streams_(this->stream(), this->handle_->get(), o.streams),
        lt_(this->device_name_) {}
  std::string name() const override { return name_; }
  std::string describe() const override {
    std::string lv = this->o_.levels >= 0 ? std::to_string(this->o_.levels)
                                          : "auto (last call: " + std::to_string(last_levels_) + ")";
    return name_ + " (levels " + lv + ", tau1 " + std::to_string(this->o_.tau1) + ", tau2 " +
           std::to_string(this->o_.tau2) + ", " + std::to_string(streams_.size()) + " streams, " +
           (this->o_.tuned_leaves ? "tuned" : "cuBLAS's") + " leaf kernels, " + this->device_name_ + ")";
  }
  double error_growth() const override { return std::pow(12.0, last_levels_); }
  std::size_t workspace_bytes(index_t m, index_t n, index_t k, Dtype dt) const override {
    int L = levels_for(m, n, k);
    index_t e = dt == Dtype::f32 ? Recursion<float, Schedule, GpuBackend>::workspace_elems(m, n, k, L, 2)
                                 : Recursion<double, Schedule, GpuBackend>::workspace_elems(m, n, k, L, 2);
    return static_cast<std::size_t>(e) * size_of(dt);
  }

  template <class T>
  void device_run(Op ta, Op tb, index_t m, index_t n, index_t k, T alpha, const T* A, index_t lda,
                  const T* B, index_t ldb, T beta, T* C, index_t ldc) {
    if (m <= 0 || n <= 0) return;
    last_levels_ = levels_for(m, n, k);
    DeviceBuffer<T>& arena = this->template arena<T>();
    arena.reserve(static_cast<std::size_t>(
        Recursion<T, Schedule, GpuBackend>::workspace_elems(m, n, k, last_levels_, 2)));
    GpuBackend be{streams_, this->o_.tuned_leaves ? &lt_ : nullptr,
                  tuned_shape(this->device_name_, std::is_same_v<T, float> ? "f32" : "f64", m / 2)};
    Recursion<T, Schedule, GpuBackend> r({last_levels_, 2}, arena.get(), be);
    r.gemm({A, lda, ta, m, k}, {B, ldb, tb, k, n}, {C, ldc, m, n}, alpha, beta);
  }

 private:
  int levels_for(index_t m, index_t n, index_t k) const {
    if (this->o_.levels >= 0) return this->o_.levels;
    index_t d = std::min({m, n, k});
    if (d < this->o_.tau1) return 0;
    int L = 1;
    while (L < 4 && d / (index_t(1) << L) >= this->o_.tau2) ++L;
    return L;
  }
  template <class T>
  DeviceBuffer<T>& arena() {
    if constexpr (std::is_same_v<T, float>) return arena_f_;
    else return arena_d_;
  }
  std::string name_;
  StreamSet streams_;
  LtGemm lt_;
  int last_levels_ = 0;
  DeviceBuffer<float> arena_f_;
  DeviceBuffer<double> arena_d_;
};

}  // namespace

std::unique_ptr<Engine> make_gpu_tiled_engine(const EngineOptions& o);

std::vector<std::string> gpu_engine_names() {
  return {"cublas", "gpu-strassen", "gpu-strassen-lowmem", "gpu-winograd", "gpu-tiled"};
}

std::unique_ptr<Engine> make_gpu_engine(const std::string& name, const EngineOptions& o) {
  if (name == "cublas") return std::make_unique<CublasEngine>(o);
  if (name == "gpu-strassen") return std::make_unique<GpuRecursiveEngine<StrassenSchedule>>(o, name);
  if (name == "gpu-strassen-lowmem")
    return std::make_unique<GpuRecursiveEngine<StrassenLowmemSchedule>>(o, name);
  if (name == "gpu-winograd") return std::make_unique<GpuRecursiveEngine<WinogradSchedule>>(o, name);
  if (name == "gpu-tiled") return make_gpu_tiled_engine(o);
  return nullptr;
}

}  // namespace distmm
