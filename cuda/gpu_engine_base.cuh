// What every GPU engine shares: a device, a stream and a cuBLAS handle; the host API of Engine
// (operands staged through pinned buffers, copied asynchronously, the product copied back); and
// the device API (DeviceGemm) that benchmarks and device-resident callers use directly.
#pragma once
#include <cstring>
#include <string>

#include "../node/engine.hpp"
#include "cuda_util.hpp"
#include "device_info.hpp"

namespace distmm {

class DeviceGemm {
 public:
  virtual ~DeviceGemm() = default;
  // C = alpha op(A) op(B) + beta C with device pointers, on stream().
  virtual void gemm_device(Op ta, Op tb, index_t m, index_t n, index_t k, float alpha,
                           const float* A, index_t lda, const float* B, index_t ldb, float beta,
                           float* C, index_t ldc) = 0;
  virtual void gemm_device(Op ta, Op tb, index_t m, index_t n, index_t k, double alpha,
                           const double* A, index_t lda, const double* B, index_t ldb,
                           double beta, double* C, index_t ldc) = 0;
  virtual cudaStream_t stream() const = 0;
};

inline cublasOperation_t cublas_op(Op o) { return o == Op::N ? CUBLAS_OP_N : CUBLAS_OP_T; }

template <class Derived>
class GpuEngineBase : public Engine, public DeviceGemm {
 public:
  explicit GpuEngineBase(const EngineOptions& o, const std::string& name) : o_(o) {
    int count = gpu_count();
    if (count == 0)
      throw UsageError("engine '" + name + "' needs a CUDA GPU and none is visible (" +
                       gpu_summary() + "): use --engine blas");
    device_ = o.device % count;  // ranks of a node spread over its GPUs
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    stream_ = std::make_unique<CudaStream>();
    handle_ = std::make_unique<CublasHandle>();
    cublas_check(cublasSetStream(handle_->get(), stream_->get()), "cublasSetStream");
    cudaDeviceProp p;
    cuda_check(cudaGetDeviceProperties(&p, device_), "properties");
    device_name_ = p.name;
  }
  cudaStream_t stream() const override { return stream_->get(); }

  // Operands, the output (and a held copy of it), and the engine's own workspace.
  std::size_t device_bytes(index_t m, index_t n, index_t k, Dtype dt) const override {
    return static_cast<std::size_t>(m * k + k * n + 2 * m * n) * size_of(dt) +
           this->workspace_bytes(m, n, k, dt);
  }
  std::size_t device_free_bytes() const override {
    std::size_t free = 0, total = 0;
    cudaSetDevice(device_);
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) return 0;
    return free;
  }

#define DISTMM_FORWARD(T)                                                                      \
  void gemm(Op ta, Op tb, index_t m, index_t n, index_t k, T alpha, const T* A, index_t lda,  \
            const T* B, index_t ldb, T beta, T* C, index_t ldc) override {                     \
    host_gemm<T>(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);                        \
  }                                                                                            \
  void gemm_device(Op ta, Op tb, index_t m, index_t n, index_t k, T alpha, const T* A,         \
                   index_t lda, const T* B, index_t ldb, T beta, T* C, index_t ldc) override { \
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");                                       \
    static_cast<Derived*>(this)->template device_run<T>(ta, tb, m, n, k, alpha, A, lda, B,     \
                                                         ldb, beta, C, ldc);                    \
  }
  DISTMM_FORWARD(float)
  DISTMM_FORWARD(double)
#undef DISTMM_FORWARD

  void hold_output(float* C, index_t rows, index_t cols, index_t ldc) override { hold<float>(C, rows, cols, ldc); }
  void hold_output(double* C, index_t rows, index_t cols, index_t ldc) override { hold<double>(C, rows, cols, ldc); }
  void release_output() override {
    if (held_f_.host) release<float>(held_f_);
    if (held_d_.host) release<double>(held_d_);
  }

 protected:
  EngineOptions o_;
  int device_ = 0;
  std::string device_name_;
  std::unique_ptr<CudaStream> stream_;
  std::unique_ptr<CublasHandle> handle_;

 private:
  template <class T>
  struct Staging {
    DeviceBuffer<T> a, b, c;
    PinnedBuffer<T> pin;
  };
  Staging<float> sf_;
  Staging<double> sd_;
  template <class T>
  Staging<T>& staging() {
    if constexpr (std::is_same_v<T, float>) return sf_;
    else return sd_;
  }

  // A held output: its copy on the device, updated in place by every call inside it.
  template <class T>
  struct Held {
    T* host = nullptr;
    index_t rows = 0, cols = 0, ld = 0;
    DeviceBuffer<T> dev;
  };
  Held<float> held_f_;
  Held<double> held_d_;
  template <class T>
  Held<T>& held() {
    if constexpr (std::is_same_v<T, float>) return held_f_;
    else return held_d_;
  }
  template <class T>
  void hold(T* C, index_t rows, index_t cols, index_t ld) {
    Held<T>& h = held<T>();
    if (rows <= 0 || cols <= 0) return;
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    h.host = C, h.rows = rows, h.cols = cols, h.ld = std::max<index_t>(ld, 1);
    h.dev.reserve(static_cast<std::size_t>(h.ld * cols));
    upload<T>(C, h.ld, rows, cols, h.dev, staging<T>().pin);  // device copy with ld = rows
  }
  template <class T>
  void release(Held<T>& h) {
    Staging<T>& s = staging<T>();
    s.pin.reserve(static_cast<std::size_t>(h.rows * h.cols));
    cuda_check(cudaMemcpyAsync(s.pin.get(), h.dev.get(), sizeof(T) * h.rows * h.cols,
                               cudaMemcpyDeviceToHost, stream()), "D2H");
    cuda_check(cudaStreamSynchronize(stream()), "sync");
    for (index_t j = 0; j < h.cols; ++j)
      std::memcpy(h.host + j * h.ld, s.pin.get() + j * h.rows, sizeof(T) * h.rows);
    h.host = nullptr;
  }

  // Copies a rows x cols column-major host block into pinned memory, then to the device.
  template <class T>
  void upload(const T* h, index_t ld, index_t rows, index_t cols, DeviceBuffer<T>& d, PinnedBuffer<T>& pin) {
    const std::size_t n = static_cast<std::size_t>(rows * cols);
    d.reserve(n);
    pin.reserve(n);
    cuda_check(cudaStreamSynchronize(stream()), "sync");  // the pinned buffer is free again
    for (index_t j = 0; j < cols; ++j) std::memcpy(pin.get() + j * rows, h + j * ld, sizeof(T) * rows);
    cuda_check(cudaMemcpyAsync(d.get(), pin.get(), n * sizeof(T), cudaMemcpyHostToDevice, stream()), "H2D");
  }

  template <class T>
  void host_gemm(Op ta, Op tb, index_t m, index_t n, index_t k, T alpha, const T* A, index_t lda,
                 const T* B, index_t ldb, T beta, T* C, index_t ldc) {
    if (m <= 0 || n <= 0) return;
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    Staging<T>& s = staging<T>();
    const index_t ar = ta == Op::N ? m : k, ac = ta == Op::N ? k : m;
    const index_t br = tb == Op::N ? k : n, bc = tb == Op::N ? n : k;
    if (k > 0) {
      upload<T>(A, lda, ar, ac, s.a, s.pin);
      upload<T>(B, ldb, br, bc, s.b, s.pin);
    }
    Held<T>& h = held<T>();
    if (h.host && C >= h.host && C < h.host + h.ld * h.cols) {
      // Inside a held output: compute into its device copy, no transfer of C.
      const index_t off = C - h.host, r0 = off % h.ld, c0 = off / h.ld;
      T* dC = h.dev.get() + r0 + c0 * h.rows;
      // (k == 0 scales C by beta, as BLAS does; A and B are not read.)
      static_cast<Derived*>(this)->template device_run<T>(
          ta, tb, m, n, k, alpha, s.a.get(), std::max<index_t>(ar, 1), s.b.get(),
          std::max<index_t>(br, 1), beta, dC, h.rows);
      return;
    }
    if (beta != T(0)) upload<T>(C, ldc, m, n, s.c, s.pin);
    else s.c.reserve(static_cast<std::size_t>(m * n));
    if (k > 0) {
      static_cast<Derived*>(this)->template device_run<T>(
          ta, tb, m, n, k, alpha, s.a.get(), std::max<index_t>(ar, 1), s.b.get(),
          std::max<index_t>(br, 1), beta, s.c.get(), m);
    } else {
      cuda_check(cudaMemsetAsync(s.c.get(), 0, sizeof(T) * m * n, stream()), "memset");
    }
    s.pin.reserve(static_cast<std::size_t>(m * n));
    cuda_check(cudaMemcpyAsync(s.pin.get(), s.c.get(), sizeof(T) * m * n, cudaMemcpyDeviceToHost, stream()), "D2H");
    cuda_check(cudaStreamSynchronize(stream()), "sync");
    if (k == 0 && beta != T(0)) {  // C = beta C: BLAS semantics for an empty inner dimension
      for (index_t j = 0; j < n; ++j)
        for (index_t i = 0; i < m; ++i) C[i + j * ldc] *= beta;
      return;
    }
    for (index_t j = 0; j < n; ++j) std::memcpy(C + j * ldc, s.pin.get() + j * m, sizeof(T) * m);
  }
};

}  // namespace distmm
