// An emulated device (RunSpec::emulate_device): the DeviceSpace interface over host memory and a
// host engine, so that the device-resident and streamed paths of every algorithm (their lanes,
// markers, k-parts, device communicators, Freivalds on "device" blocks) run and are checked on
// machines without a GPU. Every lane's work runs at once, in the order it is queued, which is
// one order the GPU's lanes may take; markers record the host clock. Communicators call MPI on
// the buffers themselves (counted as comm.hpp counts).
#include <complex>
#include <cstdlib>
#include <cstring>
#include <new>

#include "device_space.hpp"
#include "mpi.h"

namespace distmm {
namespace {

class HostDeviceComm final : public DeviceComm {
 public:
  explicit HostDeviceComm(const Comm& c) : c_(c) {}
  void broadcast_call(void* buf, index_t n, Dtype dt, int root) override {
    if (n <= 0 || c_.size() == 1) return;
    dispatch(dt, [&](auto tag) { c_.bcast(static_cast<typename decltype(tag)::type*>(buf), n, root); });
  }
  void reduce_call(const void* send, void* recv, index_t n, Dtype dt, int root) override {
    if (n <= 0) return;
    dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      c_.reduce_sum(static_cast<const T*>(send), static_cast<T*>(recv), n, root);
    });
  }
  // Sends are copied out first (a send and a receive may share a buffer, as staged copies allow
  // on the GPU); transfers between group_start and group_end are posted together at group_end.
  void sendrecv_call(const void* send, index_t ns, int dest, void* recv, index_t nr, int src, Dtype dt) override {
    Transfer t{{}, std::max<index_t>(ns, 0), dest, recv, std::max<index_t>(nr, 0), src, dt};
    const std::size_t bytes = std::size_t(t.ns) * size_of(dt);
    t.sent.resize(bytes);
    if (bytes > 0) std::memcpy(t.sent.data(), send, bytes);
    queued_.push_back(std::move(t));
    if (depth_ == 0) flush();
  }
  void group_start() override { ++depth_; }
  void group_end() override {
    if (depth_ > 0 && --depth_ == 0) flush();
  }
  void all_gather_call(const void* send, void* recv, index_t n, Dtype dt) override {
    if (n <= 0) return;
    const std::vector<unsigned char> mine = bytes_of(send, n, dt);
    dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      Requests rq;
      c_.iallgatherv(reinterpret_cast<const T*>(mine.data()), static_cast<T*>(recv),
                     std::vector<index_t>(std::size_t(c_.size()), n), rq);
      rq.wait_all();
    });
  }
  void reduce_scatter_call(const void* send, void* recv, index_t n, Dtype dt) override {
    if (n <= 0) return;
    std::vector<unsigned char> all = bytes_of(send, n * c_.size(), dt);
    dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      c_.reduce_scatter(reinterpret_cast<T*>(all.data()), static_cast<T*>(recv),
                        std::vector<index_t>(std::size_t(c_.size()), n));
    });
  }
  int rank() const override { return c_.rank(); }
  int size() const override { return c_.size(); }

 private:
  static std::vector<unsigned char> bytes_of(const void* p, index_t n, Dtype dt) {
    const auto* b = static_cast<const unsigned char*>(p);
    return std::vector<unsigned char>(b, b + std::size_t(n) * size_of(dt));
  }
  struct Transfer {
    std::vector<unsigned char> sent;
    index_t ns;
    int dest;
    void* recv;
    index_t nr;
    int src;
    Dtype dt;
  };
  void flush() {
    Requests rq;
    for (const Transfer& t : queued_)
      dispatch(t.dt, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (t.nr > 0) c_.irecv(static_cast<T*>(t.recv), t.nr, t.src, 71, rq);
        if (t.ns > 0) c_.isend(reinterpret_cast<const T*>(t.sent.data()), t.ns, t.dest, 71, rq);
      });
    rq.wait_all();
    queued_.clear();
  }
  const Comm& c_;
  int depth_ = 0;
  std::vector<Transfer> queued_;
};

class HostDeviceSpace final : public DeviceSpace {
 public:
  HostDeviceSpace(Engine& e, std::size_t free) : engine_(e), free_(free) {}
  std::string transport() const override { return "MPI on host memory"; }
  bool emulated() const override { return true; }
  DeviceBlock alloc(std::size_t bytes) override {
    if (bytes == 0) return {};
    void* p = std::calloc(bytes, 1);
    if (!p) throw std::bad_alloc();
    return DeviceBlock(this, p, bytes);
  }
  std::unique_ptr<DeviceComm> comm(const Comm& c) override { return std::make_unique<HostDeviceComm>(c); }
  void copy(void* dst, index_t ld_dst, const void* src, index_t ld_src, index_t rows, index_t cols,
            std::size_t elem, Lane) override {
    copy_2d(dst, ld_dst, src, ld_src, rows, cols, elem);
  }
  void scale_add(void* y, index_t ldy, const void* x, index_t ldx, index_t rows, index_t cols, const void* alpha,
                 const void* beta, Dtype dt) override {
    dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T a = *static_cast<const T*>(alpha), b = *static_cast<const T*>(beta);
      for (index_t j = 0; j < cols; ++j)
        for (index_t i = 0; i < rows; ++i) {
          T& out = static_cast<T*>(y)[i + j * ldy];
          const T v = a * static_cast<const T*>(x)[i + j * ldx];
          out = b == T(0) ? v : v + b * out;
        }
    });
  }
  void combine(index_t n, const Combination& c, Dtype dt) override {
    dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (index_t e = 0; e < n; ++e) {
        T in[4];
        for (int t = 0; t < c.n_in; ++t) in[t] = static_cast<const T*>(c.in[std::size_t(t)])[e];
        for (int o = 0; o < c.n_out; ++o) {
          T& out = static_cast<T*>(c.out[std::size_t(o)])[e];
          T v = c.accumulate[std::size_t(o)] ? out : T(0);
          for (int t = 0; t < c.n_in; ++t) v += T(c.coef[std::size_t(o)][std::size_t(t)]) * in[t];
          out = v;
        }
      }
    });
  }
  void zero(void* p, std::size_t bytes, Lane) override {
    if (bytes > 0) std::memset(p, 0, bytes);
  }
  void gemm(const GemmCall& call) override {
    if (call.m > 0 && call.n > 0) engine_.gemm_call(with_checked_lds(call));
  }
  void comm_waits_for_compute() override {}
  void compute_waits_for_comm() override {}
  void mark(Lane, int i) override { at_.at(std::size_t(i)) = MPI_Wtime(); }
  void wait_mark(Lane, int) override {}
  double seconds_between(int from, int to) override {
    return std::max(0.0, at_.at(std::size_t(to)) - at_.at(std::size_t(from)));
  }
  void synchronize() override {}
  void upload(void* dst, index_t ld_dst, const void* src, index_t ld_src, index_t rows, index_t cols,
              std::size_t elem) override {
    copy_2d(dst, ld_dst, src, ld_src, rows, cols, elem);
  }
  void download(void* dst, index_t ld_dst, const void* src, index_t ld_src, index_t rows, index_t cols,
                std::size_t elem) override {
    copy_2d(dst, ld_dst, src, ld_src, rows, cols, elem);
  }
  void upload_async(void* dst, index_t ld_dst, const void* src, index_t ld_src, index_t rows, index_t cols,
                    std::size_t elem) override {
    copy_2d(dst, ld_dst, src, ld_src, rows, cols, elem);
  }
  void download_async(void* dst, index_t ld_dst, const void* src, index_t ld_src, index_t rows, index_t cols,
                      std::size_t elem) override {
    copy_2d(dst, ld_dst, src, ld_src, rows, cols, elem);
  }
  HostPin pin_host(void* p, std::size_t bytes) override { return bytes > 0 ? HostPin(this, p) : HostPin(); }
  void fill_random(void* p, index_t ld, index_t rows, index_t cols, index_t row0, index_t col0,
                   std::uint64_t seed, Stream s, Fill fill, Dtype dt) override {
    dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      fill_random_block(MatrixView<T>{static_cast<T*>(p), rows, cols, ld}, row0, col0, seed, s, fill);
    });
  }
  void matvec(const void* M, index_t ld, index_t rows, index_t cols, Dtype dt, const double* x, bool x_complex,
              const double* xa, double* y, double* ya) override {
    const bool y_complex = is_complex(dt) || x_complex;
    dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (index_t c = 0; c < cols; ++c) {
        const std::complex<double> xc = x_complex ? std::complex<double>(x[2 * c], x[2 * c + 1]) : x[c];
        for (index_t r = 0; r < rows; ++r) {
          const std::complex<double> v = static_cast<const T*>(M)[r + c * ld];
          const std::complex<double> p = v * xc;
          if (y_complex) y[2 * r] += p.real(), y[2 * r + 1] += p.imag();
          else y[r] += p.real();
          ya[r] += std::abs(v) * xa[c];
        }
      }
    });
  }
  double max_abs(const void* M, index_t ld, index_t rows, index_t cols, Dtype dt) override {
    double mx = 0;
    dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (index_t c = 0; c < cols; ++c)
        for (index_t r = 0; r < rows; ++r) {
          const std::complex<double> v = static_cast<const T*>(M)[r + c * ld];
          mx = std::max(mx, std::abs(v.real()) + std::abs(v.imag()));
        }
    });
    return mx;
  }
  std::size_t free_bytes() const override { return free_; }
  std::size_t engine_workspace(index_t m, index_t n, index_t k, Dtype dt) const override {
    return engine_.workspace_bytes(m, n, k, dt);
  }

 protected:
  void release(void* p) noexcept override { std::free(p); }
  void unpin_host(void*) noexcept override {}

 private:
  static void copy_2d(void* dst, index_t ld_dst, const void* src, index_t ld_src, index_t rows, index_t cols,
                      std::size_t elem) {
    if (rows <= 0 || cols <= 0) return;
    for (index_t j = 0; j < cols; ++j)
      std::memmove(static_cast<char*>(dst) + std::size_t(j * ld_dst) * elem,
                   static_cast<const char*>(src) + std::size_t(j * ld_src) * elem, std::size_t(rows) * elem);
  }
  Engine& engine_;
  std::size_t free_;
  std::array<double, kMarks + kRunMarks> at_{};
};

}  // namespace

std::unique_ptr<DeviceSpace> make_emulated_device_space(Engine& engine, std::size_t free_bytes) {
  return std::make_unique<HostDeviceSpace>(engine, free_bytes);
}

}  // namespace distmm
