// Error checks and RAII owners for CUDA and cuBLAS resources.
#pragma once
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <complex>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../src/core/types.hpp"

namespace distmm {

inline void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
inline void cublas_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(int(s)));
}

// cuBLAS's op for op(X) of element type T (C on a real type is T).
template <class T>
cublasOperation_t cublas_op(Op o) {
  switch (effective_op<T>(o)) {
    case Op::N:
      return CUBLAS_OP_N;
    case Op::T:
      return CUBLAS_OP_T;
    default:
      return CUBLAS_OP_C;
  }
}

// cuBLAS's element type for T: std::complex is laid out as cuComplex / cuDoubleComplex.
template <class T>
struct CublasElement {
  using type = T;
};
template <>
struct CublasElement<std::complex<float>> {
  using type = cuComplex;
};
template <>
struct CublasElement<std::complex<double>> {
  using type = cuDoubleComplex;
};
template <class T>
using cublas_t = typename CublasElement<T>::type;
static_assert(sizeof(cuComplex) == sizeof(std::complex<float>) &&
              sizeof(cuDoubleComplex) == sizeof(std::complex<double>));
template <class T>
const cublas_t<T>* as_cublas(const T* p) {
  return reinterpret_cast<const cublas_t<T>*>(p);
}
template <class T>
cublas_t<T>* as_cublas(T* p) {
  return reinterpret_cast<cublas_t<T>*>(p);
}

// y = alpha x + beta y, m x n blocks (cuBLAS geam in place: y is not read when beta = 0).
template <class T>
void cublas_scale_add(cublasHandle_t h, int m, int n, T alpha, const T* x, int ldx, T beta, T* y, int ldy) {
  const auto a = as_cublas(&alpha), b = as_cublas(&beta);
  const auto xx = as_cublas(x);
  const auto yy = as_cublas(y);
  const cublasOperation_t N = CUBLAS_OP_N;
  if constexpr (std::is_same_v<T, float>) cublas_check(cublasSgeam(h, N, N, m, n, a, xx, ldx, b, yy, ldy, yy, ldy), "sgeam");
  else if constexpr (std::is_same_v<T, double>) cublas_check(cublasDgeam(h, N, N, m, n, a, xx, ldx, b, yy, ldy, yy, ldy), "dgeam");
  else if constexpr (std::is_same_v<T, std::complex<float>>) cublas_check(cublasCgeam(h, N, N, m, n, a, xx, ldx, b, yy, ldy, yy, ldy), "cgeam");
  else cublas_check(cublasZgeam(h, N, N, m, n, a, xx, ldx, b, yy, ldy, yy, ldy), "zgeam");
}

// The largest |re| + |im| of n contiguous device elements (cuBLAS i?amax, 64-bit counts): an
// upper bound of the largest modulus, at most sqrt 2 above it; 0 for n = 0.
template <class T>
double cublas_amax(cublasHandle_t h, std::int64_t n, const T* x) {
  std::int64_t at = 0;
  const auto xx = as_cublas(x);
  if constexpr (std::is_same_v<T, float>) cublas_check(cublasIsamax_64(h, n, xx, 1, &at), "isamax");
  else if constexpr (std::is_same_v<T, double>) cublas_check(cublasIdamax_64(h, n, xx, 1, &at), "idamax");
  else if constexpr (std::is_same_v<T, std::complex<float>>) cublas_check(cublasIcamax_64(h, n, xx, 1, &at), "icamax");
  else cublas_check(cublasIzamax_64(h, n, xx, 1, &at), "izamax");
  if (at < 1) return 0;
  T v{};
  cuda_check(cudaMemcpy(&v, x + (at - 1), sizeof(T), cudaMemcpyDeviceToHost), "D2H");
  return double(std::abs(std::real(v))) + double(std::abs(std::imag(v)));
}

// Device memory, grow-only (reallocated only when a larger size is asked for; release() gives
// it back; neither waits for kernels that may still use it).
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t n) { reserve(n); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  ~DeviceBuffer() { release(); }
  void reserve(std::size_t n) { cuda_check(allocate(n), "cudaMalloc"); }
  // reserve(n) without the throw: false (and the buffer empty, CUDA's error cleared) where the
  // allocation fails.
  bool try_reserve(std::size_t n) {
    if (allocate(n) == cudaSuccess) return true;
    (void)cudaGetLastError();
    return false;
  }
  T* get() const { return p_; }
  std::size_t size() const { return n_; }
  void release() {
    if (p_) cudaFree(p_);
    p_ = nullptr;
    n_ = 0;
  }

 private:
  cudaError_t allocate(std::size_t n) {
    if (n <= n_) return cudaSuccess;
    release();
    const cudaError_t e = cudaMalloc(reinterpret_cast<void**>(&p_), std::max<std::size_t>(n, 1) * sizeof(T));
    if (e != cudaSuccess) p_ = nullptr;
    else n_ = n;
    return e;
  }
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

// Page-locked host memory for fast, asynchronous host-device copies; grow-only.
template <class T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() {
    if (p_) cudaFreeHost(p_);
  }
  void reserve(std::size_t n) {
    if (n <= n_) return;
    if (p_) cudaFreeHost(p_);
    p_ = nullptr;
    cuda_check(cudaMallocHost(reinterpret_cast<void**>(&p_), std::max<std::size_t>(n, 1) * sizeof(T)),
               "cudaMallocHost");
    n_ = n;
  }
  T* get() const { return p_; }

 private:
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

class CudaStream {
 public:
  CudaStream() { cuda_check(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), "stream"); }
  // priority: as cudaStreamCreateWithPriority takes it (lower numbers first)
  explicit CudaStream(int priority) {
    cuda_check(cudaStreamCreateWithPriority(&s_, cudaStreamNonBlocking, priority), "stream");
  }
  ~CudaStream() { cudaStreamDestroy(s_); }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_{};
};

// A cuBLAS or cuBLASLt handle, created with the object and destroyed with it.
template <class H, cublasStatus_t (*Create)(H*), cublasStatus_t (*Destroy)(H)>
class LibraryHandle {
 public:
  LibraryHandle() { cublas_check(Create(&h_), "creating a cuBLAS handle"); }
  ~LibraryHandle() { Destroy(h_); }
  LibraryHandle(const LibraryHandle&) = delete;
  LibraryHandle& operator=(const LibraryHandle&) = delete;
  H get() const { return h_; }

 private:
  H h_{};
};
using CublasHandle = LibraryHandle<cublasHandle_t, cublasCreate, cublasDestroy>;
using LtHandle = LibraryHandle<cublasLtHandle_t, cublasLtCreate, cublasLtDestroy>;

class CudaEvent {
 public:
  CudaEvent() { cuda_check(cudaEventCreate(&e_), "event"); }
  ~CudaEvent() { cudaEventDestroy(e_); }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_{};
};

// Median milliseconds of `call` (after one warm-up), `reps` calls per sample.
template <class F>
double median_ms(cudaStream_t s, int samples, int reps, F&& call) {
  CudaEvent t0, t1;
  call();
  std::vector<float> t;
  for (int i = 0; i < samples; ++i) {
    cuda_check(cudaEventRecord(t0.get(), s), "event");
    for (int r = 0; r < reps; ++r) call();
    cuda_check(cudaEventRecord(t1.get(), s), "event");
    cuda_check(cudaEventSynchronize(t1.get()), "sync");
    float ms = 0;
    cudaEventElapsedTime(&ms, t0.get(), t1.get());
    t.push_back(ms / reps);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace distmm
