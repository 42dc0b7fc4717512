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
