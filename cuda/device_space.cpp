// The GPU's device space (mpi/device_space.hpp): device memory, the engine's stream and two
// more as lanes, NCCL or MPI through pinned host memory between the ranks. It reaches the
// engine through Engine's device seam alone (gemm_device_call on device_queue()).
#include "../mpi/runtime/device_space.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "../mpi/runtime/nccl_comm.hpp"
#include "../src/core/settings.hpp"
#include "../src/core/system.hpp"
#include "cuda_util.hpp"
#include "device_combine.hpp"
#include "device_copy.hpp"
#include "device_info.hpp"
#include "device_matvec.hpp"
#include "device_random.hpp"
#include "nccl_library.hpp"

namespace distmm {
namespace {

// NCCL communicators by GPU and by their members' world ranks (in rank order), kept for the
// process. Initialising one costs a collective and hundreds of milliseconds, and every plan
// over the same ranks (each Python matmul call, each test), a streamed run's stages and an
// algorithm's row and column groups would pay it again. One communicator serves all: every
// space queues its NCCL work on its own comm stream in the same order on every member, and a
// space's work is finished before another's starts (execute and run synchronize). Freed at
// MPI_Finalize, which deletes MPI_COMM_SELF's attributes first, in key order on every rank.
struct NcclCache {
  std::mutex mutex;
  std::map<std::pair<int, std::vector<int>>, std::shared_ptr<NcclComm>> comms;
};
NcclCache& nccl_cache() {
  static NcclCache* const cache = [] {
    auto* c = new NcclCache;
    int key = MPI_KEYVAL_INVALID;
    auto free_cache = [](MPI_Comm, int, void* v, void*) {
      delete static_cast<NcclCache*>(v);
      return MPI_SUCCESS;
    };
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_cache, &key, nullptr);
    MPI_Comm_set_attr(MPI_COMM_SELF, key, c);
    return c;
  }();
  return *cache;
}

// NCCL between the ranks' GPUs, on the space's comm stream. The NCCL communicator may be
// shared with other DeviceComms over the same ranks (GpuDeviceSpace::comm).
class NcclDeviceComm final : public DeviceComm {
 public:
  NcclDeviceComm(std::shared_ptr<NcclComm> nccl, cudaStream_t s) : nccl_(std::move(nccl)), s_(s) {}
  void broadcast_call(void* buf, index_t n, Dtype dt, int root) override {
    if (n <= 0 || nccl_->size() == 1) return;
    dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      nccl_->broadcast(static_cast<T*>(buf), n, root, s_);
    });
  }
  void reduce_call(const void* send, void* recv, index_t n, Dtype dt, int root) override {
    if (n <= 0) return;
    dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      nccl_->reduce_sum(static_cast<const T*>(send), static_cast<T*>(recv), n, root, s_);
    });
  }
  void sendrecv_call(const void* send, index_t ns, int dest, void* recv, index_t nr, int src,
                     Dtype dt) override {
    dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      nccl_->group_start();
      if (ns > 0) nccl_->send(static_cast<const T*>(send), ns, dest, s_);
      if (nr > 0) nccl_->recv(static_cast<T*>(recv), nr, src, s_);
      nccl_->group_end();
    });
  }
  void all_gather_call(const void* send, void* recv, index_t n, Dtype dt) override {
    if (n <= 0) return;
    dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      nccl_->all_gather(static_cast<const T*>(send), static_cast<T*>(recv), n, s_);
    });
  }
  void reduce_scatter_call(const void* send, void* recv, index_t n, Dtype dt) override {
    if (n <= 0) return;
    dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      nccl_->reduce_scatter_sum(static_cast<const T*>(send), static_cast<T*>(recv), n, s_);
    });
  }
  void group_start() override { nccl_->group_start(); }
  void group_end() override { nccl_->group_end(); }
  int rank() const override { return nccl_->rank(); }
  int size() const override { return nccl_->size(); }

 private:
  std::shared_ptr<NcclComm> nccl_;
  cudaStream_t s_;
};

// MPI through pinned host memory: each operation copies the device buffer out on the comm
// stream, waits, runs the MPI operation, and queues the copy back in. The host thread blocks
// for the transfer, so nothing overlaps: the fallback where NCCL cannot run.
class StagedDeviceComm final : public GroupedMpiComm {
 public:
  StagedDeviceComm(const Comm& c, cudaStream_t s) : c_(c), s_(s) {}
  void broadcast_call(void* buf, index_t n, Dtype dt, int root) override {
    if (n <= 0 || c_.size() == 1) return;
    const std::size_t bytes = std::size_t(n) * size_of(dt);
    if (c_.rank() == root) out(buf, bytes);
    else out_.reserve(bytes);
    dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      c_.bcast(reinterpret_cast<T*>(out_.get()), n, root);
    });
    if (c_.rank() != root) in(buf, out_.get(), bytes);
  }
  void reduce_call(const void* send, void* recv, index_t n, Dtype dt, int root) override {
    if (n <= 0) return;
    const std::size_t bytes = std::size_t(n) * size_of(dt);
    out(send, bytes);
    in_.reserve(bytes);
    dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      c_.reduce_sum(reinterpret_cast<const T*>(out_.get()), reinterpret_cast<T*>(in_.get()), n, root);
    });
    if (c_.rank() == root) in(recv, in_.get(), bytes);
  }
  void all_gather_call(const void* send, void* recv, index_t n, Dtype dt) override {
    if (n <= 0) return;
    const std::size_t bytes = std::size_t(n) * size_of(dt);
    out(send, bytes);
    in_.reserve(bytes * c_.size());
    dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      Requests rq;
      c_.iallgatherv(reinterpret_cast<const T*>(out_.get()), reinterpret_cast<T*>(in_.get()),
                     std::vector<index_t>(std::size_t(c_.size()), n), rq);
      rq.wait_all();
    });
    in(recv, in_.get(), bytes * c_.size());
  }
  void reduce_scatter_call(const void* send, void* recv, index_t n, Dtype dt) override {
    if (n <= 0) return;
    const std::size_t bytes = std::size_t(n) * size_of(dt);
    out(send, bytes * c_.size());
    in_.reserve(bytes);
    dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      c_.reduce_scatter(reinterpret_cast<T*>(out_.get()), reinterpret_cast<T*>(in_.get()),
                        std::vector<index_t>(std::size_t(c_.size()), n));
    });
    in(recv, in_.get(), bytes);
  }
  int rank() const override { return c_.rank(); }
  int size() const override { return c_.size(); }

 private:
  // Device bytes to out_ (waits for them); host bytes back in, queued on the stream.
  void out(const void* dev, std::size_t bytes) {
    out_.reserve(bytes);
    if (bytes == 0) return;
    cuda_check(cudaMemcpyAsync(out_.get(), dev, bytes, cudaMemcpyDeviceToHost, s_), "D2H");
    cuda_check(cudaStreamSynchronize(s_), "sync");
  }
  void in(void* dev, const void* host, std::size_t bytes) {
    if (bytes == 0) return;
    cuda_check(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s_), "H2D");
    // the pinned buffer is reused by the next operation: wait until it is read
    cuda_check(cudaStreamSynchronize(s_), "sync");
  }
  void post_group(std::vector<Transfer>& group) override {
    while (staged_.size() < 2 * group.size()) staged_.push_back(std::make_unique<PinnedBuffer<unsigned char>>());
    for (std::size_t i = 0; i < group.size(); ++i) {
      const Transfer& t = group[i];
      const std::size_t sb = std::size_t(t.ns) * size_of(t.dt), rb = std::size_t(t.nr) * size_of(t.dt);
      staged_[2 * i]->reserve(sb), staged_[2 * i + 1]->reserve(rb);
      if (sb > 0)
        cuda_check(cudaMemcpyAsync(staged_[2 * i]->get(), t.send, sb, cudaMemcpyDeviceToHost, s_), "D2H");
    }
    cuda_check(cudaStreamSynchronize(s_), "sync");
    Requests rq;
    for (std::size_t i = 0; i < group.size(); ++i) {
      const Transfer& t = group[i];
      dispatch(t.dt, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (t.nr > 0) c_.irecv(reinterpret_cast<T*>(staged_[2 * i + 1]->get()), t.nr, t.src, 71, rq);
        if (t.ns > 0) c_.isend(reinterpret_cast<const T*>(staged_[2 * i]->get()), t.ns, t.dest, 71, rq);
      });
    }
    rq.wait_all();
    for (std::size_t i = 0; i < group.size(); ++i) {
      const Transfer& t = group[i];
      if (t.nr > 0)
        cuda_check(cudaMemcpyAsync(t.recv, staged_[2 * i + 1]->get(), std::size_t(t.nr) * size_of(t.dt),
                                   cudaMemcpyHostToDevice, s_), "H2D");
    }
    cuda_check(cudaStreamSynchronize(s_), "sync");  // the pinned buffers are free again
      }
  const Comm& c_;
  cudaStream_t s_;
  PinnedBuffer<unsigned char> out_, in_;
  std::vector<std::unique_ptr<PinnedBuffer<unsigned char>>> staged_;
};

class GpuDeviceSpace final : public DeviceSpace {
 public:
  GpuDeviceSpace(Engine& e, int device, bool nccl, std::string transport)
      : engine_(e), device_(device), nccl_(nccl), transport_(std::move(transport)) {
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    comm_stream_ = std::make_unique<CudaStream>();
    to_comm_ = std::make_unique<CudaEvent>();
    to_compute_ = std::make_unique<CudaEvent>();
    aux_stream_ = std::make_unique<CudaStream>();
    transfer_stream_ = std::make_unique<CudaStream>();
    int pitch = 0;
    if (cudaDeviceGetAttribute(&pitch, cudaDevAttrMaxPitch, device_) == cudaSuccess && pitch > 0)
      max_pitch_ = std::size_t(pitch);
  }
  ~GpuDeviceSpace() override {
    cudaDeviceSynchronize();
  }
  std::string transport() const override { return transport_; }

  DeviceBlock alloc(std::size_t bytes) override {
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    void* p = nullptr;
    const cudaError_t err = cudaMalloc(&p, std::max<std::size_t>(bytes, 1));
    if (err != cudaSuccess) {
      cudaGetLastError();
      throw UsageError("GPU " + std::to_string(device_) + " cannot allocate " + format_bytes(double(bytes)) +
                       " more (" + format_bytes(double(free_bytes())) +
                       " free): use more GPUs (ranks), a smaller --panel, or --engine gpu-strassen-lowmem");
    }
    // zeroed before any stream may use it (the lanes do not wait for the legacy stream)
    cuda_check(cudaMemsetAsync(p, 0, std::max<std::size_t>(bytes, 1), aux_stream_->get()), "cudaMemset");
    cuda_check(cudaStreamSynchronize(aux_stream_->get()), "sync");
    return DeviceBlock(this, p, bytes);
  }
  void scale_add(void* y, index_t ldy, const void* x, index_t ldx, index_t rows, index_t cols, const void* alpha,
                 const void* beta, Dtype dt) override {
    if (rows <= 0 || cols <= 0) return;
    if (rows > INT32_MAX || cols > INT32_MAX) throw std::runtime_error("scale_add: block too large for cuBLAS");
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    const cublasHandle_t h = blas(compute_stream());
    dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      cublas_scale_add<T>(h, int(rows), int(cols), *static_cast<const T*>(alpha), static_cast<const T*>(x),
                          int(ldx), *static_cast<const T*>(beta), static_cast<T*>(y), int(ldy));
    });
  }
  void combine(index_t n, const Combination& c, Dtype dt) override {
    if (n <= 0) return;
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::array<const T*, 4> in{};
      std::array<T*, 4> out{};
      for (int t = 0; t < 4; ++t) in[t] = static_cast<const T*>(c.in[t]), out[t] = static_cast<T*>(c.out[t]);
      combine_device<T>(n, c.n_in, in, c.n_out, out, c.coef, c.accumulate, compute_stream());
    });
  }
  void zero(void* p, std::size_t bytes, Lane lane) override {
    if (bytes == 0) return;
    cuda_check(cudaMemsetAsync(p, 0, bytes, stream(lane)), "memset");
  }
  // The cache holds a key exactly where every member created it (collectively), so the members
  // agree on whether to make one.
  std::shared_ptr<NcclComm> nccl_for(const Comm& c) {
    NcclCache& cache = nccl_cache();
    const std::lock_guard<std::mutex> lock(cache.mutex);
    MPI_Group group = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
    MPI_Comm_group(c.get(), &group);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    std::vector<int> local(std::size_t(c.size())), key(std::size_t(c.size()));
    for (int r = 0; r < c.size(); ++r) local[std::size_t(r)] = r;
    MPI_Group_translate_ranks(group, c.size(), local.data(), world, key.data());
    MPI_Group_free(&group), MPI_Group_free(&world);
    auto& slot = cache.comms[{device_, key}];
    if (!slot) slot = std::make_shared<NcclComm>(c);
    return slot;
  }
  std::unique_ptr<DeviceComm> comm(const Comm& c) override {
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    if (nccl_) return std::make_unique<NcclDeviceComm>(nccl_for(c), comm_stream_->get());
    return std::make_unique<StagedDeviceComm>(c, comm_stream_->get());
  }
  void copy(void* dst, index_t ld_dst, const void* src, index_t ld_src, index_t rows, index_t cols,
            std::size_t elem, Lane lane) override {
    copy_2d(dst, ld_dst, src, ld_src, rows, cols, elem, cudaMemcpyDeviceToDevice, stream(lane));
  }
  // A tiled kernel (device_copy.cu): a transpose reads and writes whole lines.
  void copy_strided(void* dst, index_t drs, index_t dcs, const void* src, index_t srs, index_t scs, index_t rows,
                    index_t cols, Dtype dt, bool conj, const void* beta, Lane lane) override {
    if (rows <= 0 || cols <= 0) return;
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    copy_strided_device(dst, drs, dcs, src, srs, scs, rows, cols, dt, conj, beta, stream(lane));
  }
  void gemm(const GemmCall& call) override {
    if (call.m > 0 && call.n > 0) engine_.gemm_device_call(with_checked_lds(call));
  }
  void gemm_pending_a(const GemmCall& call, index_t ready_k0, index_t ready_k1) override {
    const PartlyReadyA pending{ready_k0, ready_k1, [this] { compute_waits_for_comm(); }};
    if (call.m > 0 && call.n > 0) engine_.gemm_device_pending(with_checked_lds(call), pending);
    else compute_waits_for_comm();
  }
  void comm_waits_for_compute() override {
    cuda_check(cudaEventRecord(to_comm_->get(), compute_stream()), "event");
    cuda_check(cudaStreamWaitEvent(comm_stream_->get(), to_comm_->get(), 0), "wait");
  }
  void compute_waits_for_comm() override {
    cuda_check(cudaEventRecord(to_compute_->get(), comm_stream_->get()), "event");
    cuda_check(cudaStreamWaitEvent(compute_stream(), to_compute_->get(), 0), "wait");
  }
  void mark(Lane lane, int i) override {
    cuda_check(cudaEventRecord(marks_.at(std::size_t(i)).get(), stream(lane)), "event");
    marked_.at(std::size_t(i)) = true;
  }
  void wait_mark(Lane lane, int i) override {
    if (marked_.at(std::size_t(i))) cuda_check(cudaStreamWaitEvent(stream(lane), marks_[std::size_t(i)].get(), 0), "wait");
  }
  double seconds_between(int from, int to) override {
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, marks_.at(std::size_t(from)).get(), marks_.at(std::size_t(to)).get()),
               "cudaEventElapsedTime");
    return double(ms) / 1e3;
  }
  void synchronize() override {
    cuda_check(cudaStreamSynchronize(transfer_stream_->get()), "sync");
    cuda_check(cudaStreamSynchronize(comm_stream_->get()), "sync");
    cuda_check(cudaStreamSynchronize(compute_stream()), "sync");
  }
  void upload_async(void* dst, index_t ld_dst, const void* src, index_t ld_src, index_t rows, index_t cols,
                    std::size_t elem) override {
    copy_2d(dst, ld_dst, src, ld_src, rows, cols, elem, cudaMemcpyHostToDevice, transfer_stream_->get());
  }
  void download_async(void* dst, index_t ld_dst, const void* src, index_t ld_src, index_t rows, index_t cols,
                      std::size_t elem) override {
    copy_2d(dst, ld_dst, src, ld_src, rows, cols, elem, cudaMemcpyDeviceToHost, transfer_stream_->get());
  }
  HostPin pin_host(void* p, std::size_t bytes) override {
    if (!p || bytes == 0) return {};
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    if (cudaHostRegister(p, bytes, cudaHostRegisterPortable) != cudaSuccess) {
      cudaGetLastError();  // refused (locked-memory limit, already pinned): copies are staged instead
      return {};
    }
    return HostPin(this, p);
  }
  // Host <-> device through two pinned chunks of about 64 MiB used in turn: the host threads
  // copy one chunk between the caller's (pageable) memory and pinned memory while the copy
  // engine moves the other, so neither waits for the other and the pageable side is touched by
  // many threads at once (first-touch page faults included).
  void upload(void* dst, index_t ld_dst, const void* src, index_t ld_src, index_t rows, index_t cols,
              std::size_t elem) override {
    synchronize();  // nothing queued still uses dst
    transfer(true, dst, ld_dst, const_cast<void*>(src), ld_src, rows, cols, elem);
  }
  void download(void* dst, index_t ld_dst, const void* src, index_t ld_src, index_t rows, index_t cols,
                std::size_t elem) override {
    synchronize();
    transfer(false, const_cast<void*>(src), ld_src, dst, ld_dst, rows, cols, elem);
  }
  void fill_random(void* p, index_t ld, index_t rows, index_t cols, index_t row0, index_t col0,
                   std::uint64_t seed, Stream s, Fill fill, Dtype dt) override {
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    synchronize();  // nothing queued still uses p
    dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      fill_random_device<T>(static_cast<T*>(p), ld, rows, cols, row0, col0, seed, s, fill, aux_stream_->get());
    });
    cuda_check(cudaStreamSynchronize(aux_stream_->get()), "sync");
  }
  void matvec(const void* M, index_t ld, index_t rows, index_t cols, Dtype dt, const double* x,
              bool x_complex, const double* xa, double* y, double* ya) override {
    if (rows <= 0 || cols <= 0) return;
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    const int xp = x_complex ? 2 : 1, yp = (is_complex(dt) || x_complex) ? 2 : 1;
    const std::size_t nx = std::size_t(cols) * xp, ny = std::size_t(rows) * yp;
    vec_.reserve(nx + cols + ny + rows);
    double* dx = vec_.get();
    double *dxa = dx + nx, *dy = dxa + cols, *dya = dy + ny;
    const cudaStream_t s = aux_stream_->get();
    cuda_check(cudaMemcpyAsync(dx, x, nx * sizeof(double), cudaMemcpyHostToDevice, s), "H2D");
    cuda_check(cudaMemcpyAsync(dxa, xa, cols * sizeof(double), cudaMemcpyHostToDevice, s), "H2D");
    cuda_check(cudaMemsetAsync(dy, 0, (ny + rows) * sizeof(double), s), "memset");
    device_matvec(M, ld, rows, cols, dt, dx, x_complex, dxa, dy, dya, s);
    std::vector<double> hy(ny + rows);
    cuda_check(cudaMemcpyAsync(hy.data(), dy, hy.size() * sizeof(double), cudaMemcpyDeviceToHost, s), "D2H");
    cuda_check(cudaStreamSynchronize(s), "sync");
    for (std::size_t i = 0; i < ny; ++i) y[i] += hy[i];
    for (index_t i = 0; i < rows; ++i) ya[i] += hy[ny + std::size_t(i)];
  }
  double max_abs(const void* M, index_t ld, index_t rows, index_t cols, Dtype dt) override {
    if (rows <= 0 || cols <= 0) return 0;
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    synchronize();  // M is written
    const cublasHandle_t h = blas(aux_stream_->get());
    double best = 0;
    dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* m = static_cast<const T*>(M);
      const std::size_t col_bytes = std::size_t(rows) * sizeof(T), pitch = std::size_t(ld) * sizeof(T);
      if (ld == rows) {
        best = cublas_amax(h, std::int64_t(rows) * cols, m);  // contiguous columns
      } else if (pitch > max_pitch_) {
        for (index_t c = 0; c < cols; ++c) best = std::max(best, cublas_amax(h, rows, m + c * ld));
      } else {
        // Strided columns (a block inside a gather buffer, SUMMA's B at home): packed 16 MiB of
        // columns at a time, one search each, not one (and a host round trip) per column.
        const index_t per = std::max<index_t>(1, index_t((std::size_t(16) << 20) / std::max<std::size_t>(col_bytes, 1)));
        DeviceBlock packed = alloc(std::size_t(std::min(per, cols)) * col_bytes);
        for (index_t c = 0; c < cols; c += per) {
          const index_t w = std::min(per, cols - c);
          cuda_check(cudaMemcpy2DAsync(packed.as<T>(), col_bytes, m + c * ld, pitch, col_bytes, std::size_t(w),
                                       cudaMemcpyDeviceToDevice, aux_stream_->get()),
                     "cudaMemcpy2DAsync");
          best = std::max(best, cublas_amax(h, std::int64_t(rows) * w, packed.as<const T>()));  // waits for it
        }
      }
    });
    return best;
  }
  std::size_t free_bytes() const override { return engine_.device_free_bytes(); }
  std::size_t engine_workspace(index_t m, index_t n, index_t k, Dtype dt) const override {
    return engine_.workspace_bytes(m, n, k, dt);
  }

 protected:
  void release(void* p) noexcept override {
    cudaSetDevice(device_);
    cudaDeviceSynchronize();  // no queued work may still use it
    cudaFree(p);
  }
  void reserve_transfers(index_t rows, index_t cols, std::size_t elem) override {
    if (rows <= 0 || cols <= 0) return;
    const std::size_t col_bytes = std::size_t(rows) * elem;
    for (auto& b : stage_) b.reserve(col_bytes * std::size_t(std::min(chunk_columns(col_bytes), cols)));
  }
  void unpin_host(void* p) noexcept override {
    cudaSetDevice(device_);
    cudaDeviceSynchronize();  // no queued copy may still use it
    cudaHostUnregister(p);
  }

 private:
  // Columns per pinned chunk: about 64 MiB, at least one column.
  static index_t chunk_columns(std::size_t col_bytes) {
    return std::max<index_t>(1, index_t((std::size_t(64) << 20) / col_bytes));
  }
  void transfer(bool up, void* dev, index_t ld_dev, void* host, index_t ld_host, index_t rows, index_t cols,
                std::size_t elem) {
    if (rows <= 0 || cols <= 0) return;
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    const std::size_t col_bytes = std::size_t(rows) * elem;
    const index_t chunk = chunk_columns(col_bytes);
    reserve_transfers(rows, cols, elem);
    const cudaStream_t s = aux_stream_->get();
    auto* h = static_cast<unsigned char*>(host);
    auto* d = static_cast<unsigned char*>(dev);
    // between host columns [c0, c0 + n) and stage buffer `slot`, on the host threads
    auto host_copy = [&](int slot, index_t c0, index_t n) {
      unsigned char* p = stage_[slot].get();
#pragma omp parallel for schedule(static)
      for (index_t c = 0; c < n; ++c) {
        unsigned char* hc = h + std::size_t(c0 + c) * std::size_t(ld_host) * elem;
        if (up) std::memcpy(p + std::size_t(c) * col_bytes, hc, col_bytes);
        else std::memcpy(hc, p + std::size_t(c) * col_bytes, col_bytes);
      }
    };
    auto dma = [&](int slot, index_t c0, index_t n) {
      unsigned char* dc = d + std::size_t(c0) * std::size_t(ld_dev) * elem;
      if (up)
        cuda_check(cudaMemcpy2DAsync(dc, std::size_t(ld_dev) * elem, stage_[slot].get(), col_bytes, col_bytes,
                                     std::size_t(n), cudaMemcpyHostToDevice, s), "H2D");
      else
        cuda_check(cudaMemcpy2DAsync(stage_[slot].get(), col_bytes, dc, std::size_t(ld_dev) * elem, col_bytes,
                                     std::size_t(n), cudaMemcpyDeviceToHost, s), "D2H");
      cuda_check(cudaEventRecord(staged_[slot].get(), s), "event");
    };
    const index_t chunks = (cols + chunk - 1) / chunk;
    auto cols_of = [&](index_t t) { return std::min(chunk, cols - t * chunk); };
    if (up) {
      for (index_t t = 0; t < chunks; ++t) {
        const int slot = int(t % 2);
        cuda_check(cudaEventSynchronize(staged_[slot].get()), "sync");  // its last DMA is done
        host_copy(slot, t * chunk, cols_of(t));
        dma(slot, t * chunk, cols_of(t));
      }
    } else {
      dma(0, 0, cols_of(0));
      for (index_t t = 0; t < chunks; ++t) {
        const int slot = int(t % 2);
        if (t + 1 < chunks) dma(1 - slot, (t + 1) * chunk, cols_of(t + 1));
        cuda_check(cudaEventSynchronize(staged_[slot].get()), "sync");
        host_copy(slot, t * chunk, cols_of(t));
      }
    }
    cuda_check(cudaStreamSynchronize(s), "sync");
  }
  cudaStream_t stream(Lane l) const {
    return l == Lane::compute ? compute_stream() : l == Lane::comm ? comm_stream_->get() : transfer_stream_->get();
  }
  // rows x cols elements between blocks with leading dimensions, queued on s.
  void copy_2d(void* dst, index_t ld_dst, const void* src, index_t ld_src, index_t rows, index_t cols,
               std::size_t elem, cudaMemcpyKind kind, cudaStream_t s) {
    if (rows <= 0 || cols <= 0) return;
    const std::size_t width = std::size_t(rows) * elem, dp = std::size_t(ld_dst) * elem, sp = std::size_t(ld_src) * elem;
    if (cols == 1 || (ld_dst == rows && ld_src == rows)) {  // one contiguous block
      cuda_check(cudaMemcpyAsync(dst, src, width * std::size_t(cols), kind, s), "copy");
    } else if (dp > max_pitch_ || sp > max_pitch_) {  // beyond cudaMemcpy2D's pitch limit: column by column
      for (index_t c = 0; c < cols; ++c)
        cuda_check(cudaMemcpyAsync(static_cast<char*>(dst) + std::size_t(c) * dp,
                                   static_cast<const char*>(src) + std::size_t(c) * sp, width, kind, s),
                   "copy");
    } else {
      cuda_check(cudaMemcpy2DAsync(dst, dp, src, sp, width, std::size_t(cols), kind, s), "copy");
    }
  }
  // The device space's own cuBLAS handle (geam, amax), made at first use, on stream s.
  cublasHandle_t blas(cudaStream_t s) {
    if (!blas_) {
      blas_ = std::make_unique<CublasHandle>();
      cublas_check(cublasSetPointerMode(blas_->get(), CUBLAS_POINTER_MODE_HOST), "pointer mode");
    }
    cublas_check(cublasSetStream(blas_->get(), s), "cublasSetStream");
    return blas_->get();
  }
  // The engine's stream: the compute lane.
  cudaStream_t compute_stream() const { return static_cast<cudaStream_t>(engine_.device_queue()); }
  Engine& engine_;
  int device_;
  bool nccl_;
  std::string transport_;
  std::unique_ptr<CudaStream> comm_stream_, aux_stream_, transfer_stream_;
  std::unique_ptr<CudaEvent> to_comm_, to_compute_;
  DeviceBuffer<double> vec_;
  std::unique_ptr<CublasHandle> blas_;  // blas(): scale_add's geam, max_abs's amax
  PinnedBuffer<unsigned char> stage_[2];  // upload/download chunks
  std::size_t max_pitch_ = (std::size_t(1) << 31) - 1;  // cudaMemcpy2D's largest pitch
  CudaEvent staged_[2];                   // each chunk's last copy-engine transfer
  std::array<CudaEvent, kMarks + kRunMarks> marks_;  // mark() / wait_mark()
  std::array<bool, kMarks + kRunMarks> marked_{};
};

}  // namespace

int ranks_sharing_gpu(const Comm& world) {
  // The current device (the GPU engine made its device current) by host and PCI bus: ranks
  // see their GPUs under different ordinals when each is shown only its own.
  int device = 0;
  char id[96] = {};
  if (cudaGetDevice(&device) == cudaSuccess) {
    char bus[32] = {};
    cudaDeviceGetPCIBusId(bus, sizeof bus, device);
    std::snprintf(id, sizeof id, "%s/%s", host_name().c_str(), bus);
  }
  std::vector<char> ids(sizeof id * std::size_t(world.size()));
  MPI_Allgather(id, sizeof id, MPI_CHAR, ids.data(), sizeof id, MPI_CHAR, world.get());
  int most = 1;
  for (int r = 0; r < world.size(); ++r) {
    int same = 0;
    for (int q = 0; q < world.size(); ++q) same += std::strncmp(&ids[sizeof id * r], &ids[sizeof id * q], sizeof id) == 0;
    most = std::max(most, same);
  }
  return most;
}

std::unique_ptr<DeviceSpace> make_device_space(Engine& engine, const Comm& world, int ranks_per_gpu) {
  int have = engine.capabilities().memory == Memory::device ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &have, 1, MPI_INT, MPI_MIN, world.get());
  if (!have) return nullptr;
  int device = 0;
  cuda_check(cudaGetDevice(&device), "cudaGetDevice");  // the engine made its device current
  // NCCL needs its library on every rank and one GPU per rank: ranks that share a GPU (more
  // ranks than GPUs) exchange through MPI instead.
  const bool shared = ranks_per_gpu > 1;
  const bool forced_mpi = settings().device_comm_mpi;
  int lib = nccl_library().found() ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &lib, 1, MPI_INT, MPI_MIN, world.get());
  std::string why;
  if (world.size() == 1) why = "";
  else if (forced_mpi) why = "DISTMM_DEVICE_COMM=mpi";
  else if (!lib) why = "no NCCL on some rank (" + nccl_summary() + ")";
  else if (shared) why = "ranks share a GPU: NCCL needs one GPU per rank";
  const bool nccl = world.size() > 1 && why.empty();
  std::string transport = world.size() == 1 ? "none (one rank)"
                          : nccl            ? "NCCL " + nccl_library().version_text() + " (" + nccl_library().path + ")"
                                            : "MPI through host memory (" + why + ")";
  return std::make_unique<GpuDeviceSpace>(engine, device, nccl, transport);
}

}  // namespace distmm
