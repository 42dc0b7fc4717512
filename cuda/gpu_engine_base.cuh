// What every GPU engine shares: a device, a stream and a cuBLAS handle; the host side of
// Engine's seam (operands staged through pinned buffers, copied asynchronously, the product
// copied back); and its device side (gemm_device_call on device pointers, on the engine's
// stream, its device_queue()) that benchmarks and device-resident runs use.
//
// Both sides are one type-erased virtual call (GemmCall: the dtype as a value) with a typed
// front; GpuEngineBase turns the erased calls back into the engine's typed device_run<T> for
// the types of Derived::kDtypes. The staging buffers are bytes, shared by every dtype; a held
// output is kept per dtype (an array keyed by Dtype), as the typed API allows one of each.
#pragma once
#include <array>
#include <cstring>
#include <string>

#include "../node/engine.hpp"
#include "cuda_util.hpp"
#include "device_info.hpp"

namespace distmm {

// The typed arguments of an erased call, handed to f(ta, tb, m, n, k, alpha, A, lda, ...).
template <class T, class F>
decltype(auto) with_typed_args(const GemmCall& c, F&& f) {
  return f(c.ta, c.tb, c.m, c.n, c.k, *static_cast<const T*>(c.alpha), static_cast<const T*>(c.A),
           c.lda, static_cast<const T*>(c.B), c.ldb, *static_cast<const T*>(c.beta),
           static_cast<T*>(c.C), c.ldc);
}

template <class Derived>
class GpuEngineBase : public Engine {
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
    staging_ = std::make_unique<Staging>();
    handle_ = std::make_unique<CublasHandle>();
    cublas_check(cublasSetStream(handle_->get(), stream_->get()), "cublasSetStream");
    cudaDeviceProp p;
    cuda_check(cudaGetDeviceProperties(&p, device_), "properties");
    device_name_ = p.name;
    sm_count_ = p.multiProcessorCount;
  }
  cudaStream_t stream() const { return stream_->get(); }
  void* device_queue() const override { return stream_->get(); }
  EngineCapabilities capabilities() const override {
    EngineCapabilities c;
    c.memory = Memory::device, c.holds_output = true, c.overlaps_host = true;
    return c;
  }
  DtypeSet dtypes() const override { return Derived::kDtypes; }

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

  void gemm_call(const GemmCall& c) override {
    typed(c.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      with_typed_args<T>(c, [&](auto... a) { this->template host_gemm<T>(a...); });
    });
  }
  void gemm_device_call(const GemmCall& c) override {
    reuse_a_ = c.reuse_a;  // for device_run, while it runs
    struct Reset {
      ReuseOfA& r;
      ~Reset() { r = {}; }
    } reset{reuse_a_};
    with_device_args(c, [&](auto... a) { derived().device_run(a...); });
  }

  void hold_output_call(Dtype dt, void* C, index_t rows, index_t cols, index_t ldc) override {
    typed(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      this->template hold<T>(static_cast<T*>(C), rows, cols, ldc);
    });
  }
  void release_output() override {
    for (Dtype d : kAllDtypes)
      if (held_[slot(d)].host)
        dispatch(d, [&](auto tag) { this->template release<typename decltype(tag)::type>(); });
  }

 protected:
  EngineOptions o_;
  int device_ = 0;
  std::string device_name_;
  int sm_count_ = 0;  // streaming multiprocessors: the width of one wave of thread blocks
  std::unique_ptr<CudaStream> stream_;
  std::unique_ptr<CublasHandle> handle_;
  // The running device call's ReuseOfA (none outside gemm_device_call: a host-staged call
  // refills the same staging buffers with other values).
  ReuseOfA reuse_a_{};

  // f(ta, tb, m, n, k, alpha, A, ...) with a device call's typed arguments, on this engine's
  // device (gemm_device_call and the engines' other device entries).
  template <class F>
  void with_device_args(const GemmCall& c, F&& f) {
    typed(c.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      cuda_check(cudaSetDevice(device_), "cudaSetDevice");
      with_typed_args<T>(c, f);
    });
  }

 private:
  Derived& derived() { return static_cast<Derived&>(*this); }
  static constexpr std::size_t slot(Dtype d) { return static_cast<std::size_t>(d); }
  // f(TypeTag<T>{}) for a dtype of Derived::kDtypes; UsageError for the others.
  template <class F>
  void typed(Dtype d, F&& f) {
    dispatch(d, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (Derived::kDtypes.contains(dtype_of<T>())) f(tag);
      else throw_unsupported_dtype(this->name(), Derived::kDtypes, d);
    });
  }

  // Host operands go through pinned buffers to device buffers, two sets used in turn: while the
  // product of one call runs, the next call packs and copies its operands into the other set
  // (on copy_stream_), so copies overlap compute when the caller does not wait in between
  // (held outputs, see overlaps_host()). The buffers hold bytes: every dtype uses the same ones.
  using Bytes = unsigned char;
  struct OperandSet {
    DeviceBuffer<Bytes> a, b;
    PinnedBuffer<Bytes> pa, pb;
    CudaEvent copied;    // the set's host-to-device copies are done: its pinned buffers are free
    CudaEvent consumed;  // the product that read the set is done: its device buffers are free
  };
  struct Staging {
    OperandSet set[2];
    int next = 0;
    DeviceBuffer<Bytes> c;   // C when it is not held
    PinnedBuffer<Bytes> pc;  // C's (and a held C's) way in and out, used synchronously
  };
  // Created once the engine's device is current (streams and events belong to a device).
  std::unique_ptr<Staging> staging_;
  std::unique_ptr<CudaStream> copy_stream_;
  template <class T>
  static T* as(const DeviceBuffer<Bytes>& b) { return reinterpret_cast<T*>(b.get()); }
  template <class T>
  static T* as(const PinnedBuffer<Bytes>& b) { return reinterpret_cast<T*>(b.get()); }
  template <class T>
  static std::size_t bytes(index_t rows, index_t cols) {
    return static_cast<std::size_t>(rows * cols) * sizeof(T);
  }

  // A held output: its copy on the device, updated in place by every call inside it. One per
  // dtype.
  struct Held {
    void* host = nullptr;
    index_t rows = 0, cols = 0, ld = 0;
    DeviceBuffer<Bytes> dev;
  };
  std::array<Held, kAllDtypes.size()> held_;
  template <class T>
  void hold(T* C, index_t rows, index_t cols, index_t ld) {
    Held& h = held_[slot(dtype_of<T>())];
    if (rows <= 0 || cols <= 0) return;
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    h.host = C, h.rows = rows, h.cols = cols, h.ld = std::max<index_t>(ld, 1);
    h.dev.reserve(bytes<T>(rows, cols));
    upload_c<T>(C, h.ld, rows, cols, as<T>(h.dev));  // device copy with ld = rows
  }
  template <class T>
  void release() {
    Held& h = held_[slot(dtype_of<T>())];
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    download_c<T>(as<T>(h.dev), h.rows, h.cols, static_cast<T*>(h.host), h.ld);
    h.host = nullptr;
  }

  // C's way in: pinned buffer, then the device, on the compute stream.
  template <class T>
  void upload_c(const T* C, index_t ld, index_t rows, index_t cols, T* dev) {
    Staging& s = *staging_;
    cuda_check(cudaStreamSynchronize(stream()), "sync");  // pc is free again
    s.pc.reserve(bytes<T>(rows, cols));
    pack<T>(C, ld, rows, cols, as<T>(s.pc));
    cuda_check(cudaMemcpyAsync(dev, s.pc.get(), bytes<T>(rows, cols), cudaMemcpyHostToDevice, stream()), "H2D");
  }
  // C's way out, after everything queued on the compute stream.
  template <class T>
  void download_c(const T* dev, index_t rows, index_t cols, T* C, index_t ld) {
    Staging& s = *staging_;
    cuda_check(cudaStreamSynchronize(stream()), "sync");
    s.pc.reserve(bytes<T>(rows, cols));
    cuda_check(cudaMemcpyAsync(s.pc.get(), dev, bytes<T>(rows, cols), cudaMemcpyDeviceToHost, stream()), "D2H");
    cuda_check(cudaStreamSynchronize(stream()), "sync");
    const T* pc = as<T>(s.pc);
    for (index_t j = 0; j < cols; ++j) std::memcpy(C + j * ld, pc + j * rows, sizeof(T) * rows);
  }
  template <class T>
  static void pack(const T* h, index_t ld, index_t rows, index_t cols, T* to) {
    for (index_t j = 0; j < cols; ++j) std::memcpy(to + j * rows, h + j * ld, sizeof(T) * rows);
  }

  // Packs op(A)'s and op(B)'s stored blocks into the next operand set and queues their copies;
  // the compute stream waits for them. Returns the set.
  template <class T>
  OperandSet& stage_operands(const T* A, index_t lda, index_t ar, index_t ac, const T* B,
                             index_t ldb, index_t br, index_t bc) {
    Staging& s = *staging_;
    OperandSet& o = s.set[s.next];
    s.next ^= 1;
    const std::size_t na = bytes<T>(ar, ac), nb = bytes<T>(br, bc);
    cuda_check(cudaEventSynchronize(o.copied.get()), "sync");  // pinned buffers free
    o.pa.reserve(na), o.pb.reserve(nb);
    pack<T>(A, lda, ar, ac, as<T>(o.pa));
    pack<T>(B, ldb, br, bc, as<T>(o.pb));
    if (o.a.size() < na || o.b.size() < nb) {
      cuda_check(cudaEventSynchronize(o.consumed.get()), "sync");
      o.a.reserve(na), o.b.reserve(nb);
    }
    const cudaStream_t cs = copy_stream_->get();
    cuda_check(cudaStreamWaitEvent(cs, o.consumed.get(), 0), "wait");  // device buffers free
    cuda_check(cudaMemcpyAsync(o.a.get(), o.pa.get(), na, cudaMemcpyHostToDevice, cs), "H2D");
    cuda_check(cudaMemcpyAsync(o.b.get(), o.pb.get(), nb, cudaMemcpyHostToDevice, cs), "H2D");
    cuda_check(cudaEventRecord(o.copied.get(), cs), "event");
    cuda_check(cudaStreamWaitEvent(stream(), o.copied.get(), 0), "wait");
    return o;
  }

  template <class T>
  void host_gemm(Op ta, Op tb, index_t m, index_t n, index_t k, T alpha, const T* A, index_t lda,
                 const T* B, index_t ldb, T beta, T* C, index_t ldc) {
    if (m <= 0 || n <= 0) return;
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    Staging& s = *staging_;
    const index_t ar = ta == Op::N ? m : k, ac = ta == Op::N ? k : m;
    const index_t br = tb == Op::N ? k : n, bc = tb == Op::N ? n : k;
    OperandSet* o = k > 0 ? &stage_operands<T>(A, lda, ar, ac, B, ldb, br, bc) : nullptr;
    const T* dA = o ? as<T>(o->a) : nullptr;
    const T* dB = o ? as<T>(o->b) : nullptr;
    auto run = [&](T* dC, index_t ld) {
      // (k == 0 scales C by beta, as BLAS does; A and B are not read.)
      derived().template device_run<T>(ta, tb, m, n, k, alpha, dA, std::max<index_t>(ar, 1), dB,
                                       std::max<index_t>(br, 1), beta, dC, ld);
      if (o) cuda_check(cudaEventRecord(o->consumed.get(), stream()), "event");
    };
    Held& h = held_[slot(dtype_of<T>())];
    T* const hc = static_cast<T*>(h.host);
    if (hc && C >= hc && C < hc + h.ld * h.cols) {
      // Inside a held output: compute into its device copy and return while it runs.
      const index_t off = C - hc, r0 = off % h.ld, c0 = off / h.ld;
      run(as<T>(h.dev) + r0 + c0 * h.rows, h.rows);
      return;
    }
    s.c.reserve(bytes<T>(m, n));
    if (beta != T(0)) upload_c<T>(C, ldc, m, n, as<T>(s.c));
    else if (k == 0) cuda_check(cudaMemsetAsync(s.c.get(), 0, bytes<T>(m, n), stream()), "memset");
    run(as<T>(s.c), m);
    download_c<T>(as<T>(s.c), m, n, C, ldc);
  }
};

}  // namespace distmm
