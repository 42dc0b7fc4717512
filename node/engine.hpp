// The node layer's only interface: one gemm-like call. A distributed algorithm sees its local
// engine through this call alone, and an engine knows nothing of MPI.
//
// The element type travels as a value (GemmCall::dtype, CTF's idea: the algebraic structure,
// not the C++ type, crosses the interface), so the interface has one virtual call for every
// type of the dtype list; Engine::gemm<T> is the typed front that callers use, and EngineBase
// turns the call back into the engine's typed run<T> for the types it supports.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../src/core/types.hpp"

namespace distmm {

struct EngineOptions {
  int threads = 1;           // threads this rank may use (BLAS and OpenMP)
  int levels = -1;           // Strassen-like recursion levels; -1 = choose automatically
  index_t cutoff = 256;      // smallest dimension that still recurses
  index_t block = 96;        // q for the cache-aware tilings (seed 004)
  std::size_t cache_bytes = 0;  // shared cache size override for the tilings (0 = read it)
  int device = 0;            // GPU ordinal for the cuda engines (taken modulo the GPUs seen)
  index_t tau1 = 4096;       // GPU engines: below this, plain cuBLAS (seed 003's tau1)
  index_t tau2 = 4096;       // GPU engines: recurse again while halves stay >= tau2
  int streams = 2;           // GPU engines: CUDA streams for independent leaf products
  bool tuned_leaves = true;  // GPU engines: leaf products in the tuning file's configuration
  int moduli = 0;            // INT8-emulated engines: moduli count, 0 = from the accuracy rule
  // INT8-emulated engines: the accuracy target, "native", "max" or a relative error such as
  // "1e-10" (cuda/ozaki_accuracy.hpp, docs/accuracy.md)
  std::string accuracy = "native";
};

// op(A) across consecutive device calls (cuboid's first step, cut by B's columns into a part
// that starts before the rest of B arrives): keep lets the engine hold what it derives from
// op(A) (an emulation's statistics and slices) for the next call; kept is the caller's word
// that op(A) is the previous call's, the same memory with the same values. The engine keeps
// nothing past a call without keep, checks the pointer, op, shape and lda, and otherwise
// derives anew; an engine that derives nothing from op(A) ignores both, as does every
// host-staged call.
struct ReuseOfA {
  bool keep = false, kept = false;
};

// C = alpha op(A) op(B) + beta C, column-major, op(A) m x k, op(B) k x n; alpha and beta point
// to values of `dtype`, the matrices hold elements of `dtype`.
struct GemmCall {
  Dtype dtype;
  Op ta, tb;
  index_t m, n, k;
  const void* alpha;
  const void* A;
  index_t lda;
  const void* B;
  index_t ldb;
  const void* beta;
  void* C;
  index_t ldc;
  ReuseOfA reuse_a{};
};

// op(A) with part of it still on its way (a distributed caller gathering A's columns while the
// engine starts): only its columns [ready_k0, ready_k1) hold their values when the call begins,
// and wait_rest() (called once, before any other column is read; a device engine enqueues it
// on its stream) makes the rest available. An engine that cannot start on part of A calls it
// first.
struct PartlyReadyA {
  index_t ready_k0 = 0, ready_k1 = 0;
  std::function<void()> wait_rest;
};

// Where an engine's operands live while it computes.
enum class Memory { host, device };

// What an engine can do, as the run's planner reads it: one value instead of a question per
// property. capabilities() gives the engine's fixed ones; capabilities_for(m, n, k, dt) adds
// those of one call of that shape and the accelerator's free memory.
struct EngineCapabilities {
  // device: the engine computes in an accelerator's memory and also takes device pointers
  // (gemm_device_call, on device_queue()); a device-resident run needs one.
  Memory memory = Memory::host;
  bool holds_output = false;   // hold_output() keeps C in the engine's own memory between calls
  bool overlaps_host = false;  // calls into a held output return before the product is done
  // of one call of the given shape
  bool prefers_whole_k = false;
  std::size_t workspace_bytes = 0;    // extra bytes the call allocates
  std::size_t device_bytes = 0;       // accelerator bytes the call needs (host-staged products)
  std::size_t device_free_bytes = 0;  // what the accelerator has free now
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string name() const = 0;
  virtual DtypeSet dtypes() const = 0;

  // C = alpha op(A) op(B) + beta C; T is taken from the matrices.
  template <class T>
  void gemm(Op ta, Op tb, index_t m, index_t n, index_t k, nondeduced_t<T> alpha, const T* A,
            index_t lda, const T* B, index_t ldb, nondeduced_t<T> beta, T* C, index_t ldc) {
    gemm_call({dtype_of<T>(), ta, tb, m, n, k, &alpha, A, lda, B, ldb, &beta, C, ldc});
  }
  // The same with the type as a value. Throws UsageError for a dtype the engine lacks.
  virtual void gemm_call(const GemmCall& call) = 0;

  // The device side of the same seam, for engines whose capabilities().memory is device: A, B
  // and C are device pointers (alpha and beta host ones), the product is queued on
  // device_queue() and the call returns at once. A host engine has none (logic_error).
  template <class T>
  void gemm_device(Op ta, Op tb, index_t m, index_t n, index_t k, nondeduced_t<T> alpha, const T* A,
                   index_t lda, const T* B, index_t ldb, nondeduced_t<T> beta, T* C, index_t ldc) {
    gemm_device_call({dtype_of<T>(), ta, tb, m, n, k, &alpha, A, lda, B, ldb, &beta, C, ldc});
  }
  virtual void gemm_device_call(const GemmCall& call);
  // The same with part of op(A) still on its way (PartlyReadyA); an engine that cannot start
  // on part of A waits for all of it first.
  virtual void gemm_device_pending(const GemmCall& call, const PartlyReadyA& pending) {
    pending.wait_rest();
    gemm_device_call(call);
  }
  // The queue the device calls are ordered on, opaque here (a cudaStream_t for the GPU
  // engines, which the device space in cuda/ casts back); null for host engines.
  virtual void* device_queue() const { return nullptr; }

  virtual EngineCapabilities capabilities() const { return {}; }
  EngineCapabilities capabilities_for(index_t m, index_t n, index_t k, Dtype dt) const {
    EngineCapabilities c = capabilities();
    c.prefers_whole_k = prefers_whole_k(m, n, k, dt);
    c.workspace_bytes = workspace_bytes(m, n, k, dt);
    c.device_bytes = device_bytes(m, n, k, dt);
    c.device_free_bytes = device_free_bytes();
    return c;
  }

  // Extra bytes the engine allocates for one call of this size (its peak workspace).
  virtual std::size_t workspace_bytes(index_t m, index_t n, index_t k, Dtype dt) const {
    (void)m, (void)n, (void)k, (void)dt;
    return 0;
  }
  // Bytes of accelerator memory one call of this size needs, and what the accelerator has free
  // (both 0 for host engines).
  virtual std::size_t device_bytes(index_t m, index_t n, index_t k, Dtype dt) const {
    (void)m, (void)n, (void)k, (void)dt;
    return 0;
  }
  virtual std::size_t device_free_bytes() const { return 0; }
  // Factor by which the engine's rounding-error bound exceeds the classical one (gamma_k), for
  // the verification tolerance: 12^L for L Strassen levels, 18^L for Winograd's variant (Higham,
  // Accuracy and Stability of Numerical Algorithms, 2nd ed., Thm. 23.3 and Sec. 23.2.2), 1 for
  // classical engines.
  virtual double error_growth() const { return 1.0; }
  // Strassen-like recursion levels that ran (the most over the calls so far; 0 for classical
  // engines): error_growth() follows them, not the levels asked for.
  virtual int levels_run() const { return 0; }
  // An output block that a sequence of gemm calls will update (Cannon's and SUMMA's steps): an
  // engine with its own memory (a GPU) may keep it there until release_output(), instead of
  // copying it in and out at every call. Calls between hold and release must target C inside
  // [C, C + ldc * cols). Host engines need nothing.
  template <class T>
  void hold_output(T* C, index_t rows, index_t cols, index_t ldc) {
    hold_output_call(dtype_of<T>(), C, rows, cols, ldc);
  }
  virtual void hold_output_call(Dtype dt, void* C, index_t rows, index_t cols, index_t ldc) {
    (void)dt, (void)C, (void)rows, (void)cols, (void)ldc;
  }
  virtual void release_output() {}
  // True when calls into a held output may return before the product is done (a GPU working
  // asynchronously): the caller's thread is then free, e.g. to progress MPI transfers, and the
  // operands were already consumed (copied) when the call returned.
  bool overlaps_host() const { return capabilities().overlaps_host; }
  // True where a Strassen-like engine would recurse on this product: every split of k repeats
  // its addition passes and shrinks its leaves, so an algorithm should hand it whole-k
  // products where memory allows. The same answer on every rank for the same arguments (a
  // collective plan may rest on it).
  virtual bool prefers_whole_k(index_t m, index_t n, index_t k, Dtype dt) const {
    (void)m, (void)n, (void)k, (void)dt;
    return false;
  }
  // What the engine chose (levels, tile sizes), for the report.
  virtual std::string describe() const { return name(); }
};

// "engine 'gpu-tiled' supports f32, f64, not c64: ..." (a UsageError).
[[noreturn]] void throw_unsupported_dtype(const std::string& engine, DtypeSet supported, Dtype d);

// Turns gemm_call back into Derived::run<T> for the types in Derived::kDtypes.
template <class Derived>
class EngineBase : public Engine {
 public:
  DtypeSet dtypes() const override { return Derived::kDtypes; }
  void gemm_call(const GemmCall& c) override {
    dispatch(c.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (Derived::kDtypes.contains(dtype_of<T>()))
        static_cast<Derived*>(this)->template run<T>(
            c.ta, c.tb, c.m, c.n, c.k, *static_cast<const T*>(c.alpha), static_cast<const T*>(c.A),
            c.lda, static_cast<const T*>(c.B), c.ldb, *static_cast<const T*>(c.beta),
            static_cast<T*>(c.C), c.ldc);
      else
        throw_unsupported_dtype(this->name(), Derived::kDtypes, c.dtype);
    });
  }
};

// The one registry of CPU and GPU engines: `--engine NAME`, `distmm info`, the help text.
struct EngineInfo {
  std::string name;
  std::string summary;  // one line: what it does
  DtypeSet dtypes;
  Memory memory = Memory::host;
  std::function<std::unique_ptr<Engine>(const EngineOptions&)> make;
  bool recursive = false;  // has Strassen-like recursion levels (--levels, --cutoff)
  bool tiled = false;      // a cache-aware tiling of q x q blocks (--block)
  bool emulated = false;   // products emulated on integer tensor cores (--moduli)
};

// The entry of engine class E (its kDtypes, a factory that passes the options on).
template <class E>
EngineInfo engine_entry(std::string name, std::string summary, Memory memory = Memory::host) {
  return {std::move(name), std::move(summary), E::kDtypes, memory,
          [](const EngineOptions& o) -> std::unique_ptr<Engine> { return std::make_unique<E>(o); }};
}

const std::vector<EngineInfo>& engine_registry();
// The entry of `name`; throws UsageError naming the known engines.
const EngineInfo& engine_info(const std::string& name);
std::vector<std::string> engine_names();
std::unique_ptr<Engine> make_engine(const std::string& name, const EngineOptions& opts);

}  // namespace distmm
