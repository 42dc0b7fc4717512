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
    copy_stream_ = std::make_unique<CudaStream>();
    sf_ = std::make_unique<Staging<float>>();
    sd_ = std::make_unique<Staging<double>>();
    handle_ = std::make_unique<CublasHandle>();
    cublas_check(cublasSetStream(handle_->get(), stream_->get()), "cublasSetStream");
    cudaDeviceProp p;
    cuda_check(cudaGetDeviceProperties(&p, device_), "properties");
    device_name_ = p.name;
  }
  cudaStream_t stream() const override { return stream_->get(); }

  // Two sets of operand buffers, the output and a held copy of it, and the engine's workspace.
  std::size_t device_bytes(index_t m, index_t n, index_t k, Dtype dt) const override {
    return static_cast<std::size_t>(2 * (m * k + k * n) + 2 * m * n) * size_of(dt) +
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
  bool overlaps_host() const override { return true; }

 protected:
  EngineOptions o_;
  int device_ = 0;
  std::string device_name_;
  std::unique_ptr<CudaStream> stream_;
  std::unique_ptr<CublasHandle> handle_;

 private:
  // Host operands go through pinned buffers to device buffers, two sets used in turn: while the
  // product of one call runs, the next call packs and copies its operands into the other set
  // (on copy_stream_), so copies overlap compute when the caller does not wait in between
  // (held outputs, see overlaps_host()).
  template <class T>
  struct OperandSet {
    DeviceBuffer<T> a, b;
    PinnedBuffer<T> pa, pb;
    CudaEvent copied;    // the set's host-to-device copies are done: its pinned buffers are free
    CudaEvent consumed;  // the product that read the set is done: its device buffers are free
  };
  template <class T>
  struct Staging {
    OperandSet<T> set[2];
    int next = 0;
    DeviceBuffer<T> c;   // C when it is not held
    PinnedBuffer<T> pc;  // C's (and a held C's) way in and out, used synchronously
  };
  // Created once the engine's device is current (streams and events belong to a device).
  std::unique_ptr<Staging<float>> sf_;
  std::unique_ptr<Staging<double>> sd_;
  std::unique_ptr<CudaStream> copy_stream_;
  template <class T>
  Staging<T>& staging() {
    if constexpr (std::is_same_v<T, float>) return *sf_;
    else return *sd_;
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
    h.dev.reserve(static_cast<std::size_t>(rows * cols));
    upload_c<T>(C, h.ld, rows, cols, h.dev.get());  // device copy with ld = rows
  }
  template <class T>
  void release(Held<T>& h) {
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    download_c<T>(h.dev.get(), h.rows, h.cols, h.host, h.ld);
    h.host = nullptr;
  }

  // C's way in: pinned buffer, then the device, on the compute stream.
  template <class T>
  void upload_c(const T* C, index_t ld, index_t rows, index_t cols, T* dev) {
    Staging<T>& s = staging<T>();
    cuda_check(cudaStreamSynchronize(stream()), "sync");  // pc is free again
    s.pc.reserve(static_cast<std::size_t>(rows * cols));
    pack<T>(C, ld, rows, cols, s.pc.get());
    cuda_check(cudaMemcpyAsync(dev, s.pc.get(), sizeof(T) * rows * cols, cudaMemcpyHostToDevice, stream()), "H2D");
  }
  // C's way out, after everything queued on the compute stream.
  template <class T>
  void download_c(const T* dev, index_t rows, index_t cols, T* C, index_t ld) {
    Staging<T>& s = staging<T>();
    cuda_check(cudaStreamSynchronize(stream()), "sync");
    s.pc.reserve(static_cast<std::size_t>(rows * cols));
    cuda_check(cudaMemcpyAsync(s.pc.get(), dev, sizeof(T) * rows * cols, cudaMemcpyDeviceToHost, stream()), "D2H");
    cuda_check(cudaStreamSynchronize(stream()), "sync");
    for (index_t j = 0; j < cols; ++j) std::memcpy(C + j * ld, s.pc.get() + j * rows, sizeof(T) * rows);
  }
  template <class T>
  static void pack(const T* h, index_t ld, index_t rows, index_t cols, T* to) {
    for (index_t j = 0; j < cols; ++j) std::memcpy(to + j * rows, h + j * ld, sizeof(T) * rows);
  }

  // Packs op(A)'s and op(B)'s stored blocks into the next operand set and queues their copies;
  // the compute stream waits for them. Returns the set.
  template <class T>
  OperandSet<T>& stage_operands(const T* A, index_t lda, index_t ar, index_t ac, const T* B,
                                index_t ldb, index_t br, index_t bc) {
    Staging<T>& s = staging<T>();
    OperandSet<T>& o = s.set[s.next];
    s.next ^= 1;
    const std::size_t na = static_cast<std::size_t>(ar * ac), nb = static_cast<std::size_t>(br * bc);
    cuda_check(cudaEventSynchronize(o.copied.get()), "sync");  // pinned buffers free
    o.pa.reserve(na), o.pb.reserve(nb);
    pack<T>(A, lda, ar, ac, o.pa.get());
    pack<T>(B, ldb, br, bc, o.pb.get());
    if (o.a.size() < na || o.b.size() < nb) {
      cuda_check(cudaEventSynchronize(o.consumed.get()), "sync");
      o.a.reserve(na), o.b.reserve(nb);
    }
    const cudaStream_t cs = copy_stream_->get();
    cuda_check(cudaStreamWaitEvent(cs, o.consumed.get(), 0), "wait");  // device buffers free
    cuda_check(cudaMemcpyAsync(o.a.get(), o.pa.get(), na * sizeof(T), cudaMemcpyHostToDevice, cs), "H2D");
    cuda_check(cudaMemcpyAsync(o.b.get(), o.pb.get(), nb * sizeof(T), cudaMemcpyHostToDevice, cs), "H2D");
    cuda_check(cudaEventRecord(o.copied.get(), cs), "event");
    cuda_check(cudaStreamWaitEvent(stream(), o.copied.get(), 0), "wait");
    return o;
  }

  template <class T>
  void host_gemm(Op ta, Op tb, index_t m, index_t n, index_t k, T alpha, const T* A, index_t lda,
                 const T* B, index_t ldb, T beta, T* C, index_t ldc) {
    if (m <= 0 || n <= 0) return;
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    Staging<T>& s = staging<T>();
    const index_t ar = ta == Op::N ? m : k, ac = ta == Op::N ? k : m;
    const index_t br = tb == Op::N ? k : n, bc = tb == Op::N ? n : k;
    OperandSet<T>* o = k > 0 ? &stage_operands<T>(A, lda, ar, ac, B, ldb, br, bc) : nullptr;
    const T* dA = o ? o->a.get() : nullptr;
    const T* dB = o ? o->b.get() : nullptr;
    auto run = [&](T* dC, index_t ld) {
      // (k == 0 scales C by beta, as BLAS does; A and B are not read.)
      static_cast<Derived*>(this)->template device_run<T>(ta, tb, m, n, k, alpha, dA, std::max<index_t>(ar, 1),
                                                           dB, std::max<index_t>(br, 1), beta, dC, ld);
      if (o) cuda_check(cudaEventRecord(o->consumed.get(), stream()), "event");
    };
    Held<T>& h = held<T>();
    if (h.host && C >= h.host && C < h.host + h.ld * h.cols) {
      // Inside a held output: compute into its device copy and return while it runs.
      const index_t off = C - h.host, r0 = off % h.ld, c0 = off / h.ld;
      run(h.dev.get() + r0 + c0 * h.rows, h.rows);
      return;
    }
    s.c.reserve(static_cast<std::size_t>(m * n));
    if (beta != T(0)) upload_c<T>(C, ldc, m, n, s.c.get());
    else if (k == 0) cuda_check(cudaMemsetAsync(s.c.get(), 0, sizeof(T) * m * n, stream()), "memset");
    run(s.c.get(), m);
    download_c<T>(s.c.get(), m, n, C, ldc);
  }
};

}  // namespace distmm
