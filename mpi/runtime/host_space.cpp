// Host memory as a memory space: the one schedule each distributed algorithm writes over a
// DeviceSpace runs here for a host run (the host engine's products, MPI between ranks) and, as
// an emulated device (RunSpec::emulate_device), checks the device-resident and streamed paths on
// machines without a GPU.
//
// The compute lane is the calling thread: a product, addition or copy is done when its call
// returns. The comm lane is MPI's nonblocking operations, left in flight until the compute lane
// waits for them (compute_waits_for_comm), a marker is waited on, or a later operation touches
// memory they touch; each product meanwhile lets them progress (gemm_with_progress), so the next
// step's transfers overlap this step's product as on a GPU's two streams. Those rules keep the
// comm lane's order for any schedule that is correct on a GPU. Markers record the host clock.
#include <algorithm>
#include <complex>
#include <list>
#include <cstdlib>
#include <unordered_map>
#include <cstring>
#include <new>

#include "../../node/fused.hpp"
#include "../../src/core/system.hpp"
#include "device_space.hpp"
#include "mpi.h"
#include "overlap.hpp"

namespace distmm {
namespace {

// What the comm lane has in flight: MPI requests and the memory they read or write.
class InFlight {
 public:
  Requests& requests() { return requests_; }
  // Waits for everything in flight when [p, p + bytes) meets memory in flight and either side
  // writes: the later operation then sees the lane's earlier ones done, as a stream would.
  void before_touching(const void* p, std::size_t bytes, bool writes) {
    if (bytes == 0 || ranges_.empty()) return;
    const char* b = static_cast<const char*>(p);
    for (const Range& r : ranges_)
      if ((writes || r.writes) && b < r.p + r.bytes && r.p < b + bytes) return settle();
  }
  void add(const void* p, std::size_t bytes, bool writes) {
    if (bytes > 0) ranges_.push_back({static_cast<const char*>(p), bytes, writes, posted()});
  }
  // The requests posted so far, counted from the lane's start (what a marker records).
  std::uint64_t posted() const { return done_ + requests_.size(); }
  // Waits for the requests posted before `upto` (a marker's posted()) alone: the later ones stay
  // in flight, as a stream's later work does past an event.
  void wait_until(std::uint64_t upto) {
    if (upto <= done_) return;
    const std::size_t n = std::size_t(upto - done_);
    requests_.wait_first(n);
    done_ += n;
    std::erase_if(ranges_, [&](const Range& r) { return r.posted <= done_; });
    if (requests_.empty()) settle();
  }
  // Keeps a copy of what a send reads alive until the send completes.
  const void* keep(const void* p, std::size_t bytes) {
    kept_.emplace_back(static_cast<const unsigned char*>(p), static_cast<const unsigned char*>(p) + bytes);
    return kept_.back().data();
  }
  void settle() {
    done_ += requests_.size();
    requests_.wait_all();
    ranges_.clear();
    kept_.clear();
  }
  bool idle() const { return ranges_.empty() && requests_.empty(); }

 private:
  struct Range {
    const char* p;
    std::size_t bytes;
    bool writes;
    std::uint64_t posted;  // posted() once its requests were
  };
  Requests requests_;
  std::uint64_t done_ = 0;  // requests waited for, counted from the lane's start
  std::vector<Range> ranges_;
  std::list<std::vector<unsigned char>> kept_;  // stable addresses
};

class HostComm final : public GroupedMpiComm {
 public:
  HostComm(const Comm& c, InFlight& lane) : c_(c), lane_(lane) {}
  void broadcast_call(void* buf, index_t n, Dtype dt, int root) override {
    if (n <= 0 || c_.size() == 1) return;
    const std::size_t bytes = std::size_t(n) * size_of(dt);
    const bool writes = c_.rank() != root;
    lane_.before_touching(buf, bytes, writes);
    dispatch(dt, [&](auto tag) { c_.ibcast(static_cast<typename decltype(tag)::type*>(buf), n, root, lane_.requests()); });
    lane_.add(buf, bytes, writes);
  }
  void reduce_call(const void* send, void* recv, index_t n, Dtype dt, int root) override {
    if (n <= 0) return;
    const std::size_t bytes = std::size_t(n) * size_of(dt);
    lane_.before_touching(send, bytes, false);
    if (c_.rank() == root) lane_.before_touching(recv, bytes, true);
    dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      c_.reduce_sum(static_cast<const T*>(send), static_cast<T*>(recv), n, root);
    });
  }
  void all_gather_call(const void* send, void* recv, index_t n, Dtype dt) override {
    all_gather_v_call(send, recv, std::vector<index_t>(std::size_t(c_.size()), n), dt);
  }
  void reduce_scatter_call(const void* send, void* recv, index_t n, Dtype dt) override {
    // The ring sums in place: a copy keeps the caller's send as it was.
    const std::size_t bytes = std::size_t(n) * std::size_t(c_.size()) * size_of(dt);
    std::vector<unsigned char> scratch(static_cast<const unsigned char*>(send), static_cast<const unsigned char*>(send) + bytes);
    reduce_scatter_v_call(scratch.data(), recv, std::vector<index_t>(std::size_t(c_.size()), n), dt);
  }
  void all_gather_v_call(const void* send, void* recv, const std::vector<index_t>& counts, Dtype dt) override {
    index_t total = 0;
    for (index_t c : counts) total += c;
    if (total <= 0) return;
    const std::size_t e = size_of(dt);
    const std::size_t mine = std::size_t(counts[std::size_t(c_.rank())]) * e;
    lane_.before_touching(send, mine, false);
    lane_.before_touching(recv, std::size_t(total) * e, true);
    dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      c_.iallgatherv(static_cast<const T*>(send), static_cast<T*>(recv), counts, lane_.requests());
    });
    lane_.add(send, mine, false);
    lane_.add(recv, std::size_t(total) * e, true);
  }
  void reduce_scatter_v_call(void* send, void* recv, const std::vector<index_t>& counts, Dtype dt) override {
    index_t total = 0;
    for (index_t c : counts) total += c;
    if (total <= 0) return;
    const std::size_t e = size_of(dt);
    lane_.before_touching(send, std::size_t(total) * e, true);
    lane_.before_touching(recv, std::size_t(counts[std::size_t(c_.rank())]) * e, true);
    dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      c_.reduce_scatter(static_cast<T*>(send), static_cast<T*>(recv), counts);
    });
  }
  int rank() const override { return c_.rank(); }
  int size() const override { return c_.size(); }

 private:
  // A send that reads memory a receive of the same group writes is copied out first (a shift
  // in place).
  void post_group(std::vector<Transfer>& group) override {
    auto overlaps = [](const void* a, std::size_t na, const void* b, std::size_t nb) {
      const char *x = static_cast<const char*>(a), *y = static_cast<const char*>(b);
      return na > 0 && nb > 0 && x < y + nb && y < x + na;
    };
    for (Transfer& t : group) {
      lane_.before_touching(t.send, t.send_bytes(), false);
      lane_.before_touching(t.recv, t.recv_bytes(), true);
      for (const Transfer& u : group)
        if (overlaps(t.send, t.send_bytes(), u.recv, u.recv_bytes())) {
          t.send = lane_.keep(t.send, t.send_bytes());
          break;
        }
    }
    for (const Transfer& t : group)
      dispatch(t.dt, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (t.nr > 0) c_.irecv(static_cast<T*>(t.recv), t.nr, t.src, 71, lane_.requests());
        if (t.ns > 0) c_.isend(static_cast<const T*>(t.send), t.ns, t.dest, 71, lane_.requests());
      });
    for (const Transfer& t : group) lane_.add(t.send, t.send_bytes(), false), lane_.add(t.recv, t.recv_bytes(), true);
  }
  const Comm& c_;
  InFlight& lane_;
};

// f(std::integral_constant<size_t, n>) for a run-time n in 1..4.
template <class F>
void up_to_four(int n, F&& f) {
  switch (n) {
    case 1: return f(std::integral_constant<std::size_t, 1>{});
    case 2: return f(std::integral_constant<std::size_t, 2>{});
    case 3: return f(std::integral_constant<std::size_t, 3>{});
    case 4: return f(std::integral_constant<std::size_t, 4>{});
    default: throw std::logic_error("a combination takes 1 to 4 inputs and outputs");
  }
}

class HostSpace final : public DeviceSpace {
 public:
  HostSpace(Engine& e, std::size_t free, bool emulated, bool enforced = false)
      : engine_(e), free_(free), emulated_(emulated), enforced_(emulated && enforced) {}
  ~HostSpace() override { lane_.settle(); }
  std::string transport() const override { return "MPI on host memory"; }
  bool emulated() const override { return emulated_; }
  bool on_host() const override { return true; }
  bool takes_uneven_parts() const override { return true; }
  DeviceBlock alloc(std::size_t bytes) override {
    if (bytes == 0) return {};
    if (enforced_ && bytes > free_ - used_)  // as a GPU refuses (cuda/device_space.cpp)
      throw UsageError("the emulated device cannot allocate " + format_bytes(double(bytes)) + " more (" +
                       format_bytes(double(free_ - used_)) + " free of " + format_bytes(double(free_)) + ")");
    void* p = std::calloc(bytes, 1);
    if (!p) throw std::bad_alloc();
    if (enforced_) used_ += bytes, sizes_[p] = bytes;
    return DeviceBlock(this, p, bytes);
  }
  std::unique_ptr<DeviceComm> comm(const Comm& c) override { return std::make_unique<HostComm>(c, lane_); }
  void copy(void* dst, index_t ld_dst, const void* src, index_t ld_src, index_t rows, index_t cols,
            std::size_t elem, Lane lane) override {
    if (lane != Lane::compute) in_order(dst, ld_dst, src, ld_src, rows, cols, elem);
    copy_2d(dst, ld_dst, src, ld_src, rows, cols, elem);
  }
  void scale_add(void* y, index_t ldy, const void* x, index_t ldx, index_t rows, index_t cols, const void* alpha,
                 const void* beta, Dtype dt) override {
    dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T a = *static_cast<const T*>(alpha), b = *static_cast<const T*>(beta);
      for (index_t j = 0; j < cols; ++j) {
        T* out = static_cast<T*>(y) + j * ldy;
        const T* in = static_cast<const T*>(x) + j * ldx;
        if (b == T(0))
          for (index_t i = 0; i < rows; ++i) out[i] = a * in[i];
        else
          for (index_t i = 0; i < rows; ++i) out[i] = a * in[i] + b * out[i];
      }
    });
  }
  void copy_strided(void* dst, index_t drs, index_t dcs, const void* src, index_t srs, index_t scs, index_t rows,
                    index_t cols, Dtype dt, bool conj, const void* beta, Lane lane) override {
    if (rows <= 0 || cols <= 0) return;
    const std::size_t e = size_of(dt);
    if (lane != Lane::compute) {
      lane_.before_touching(src, std::size_t((rows - 1) * srs + (cols - 1) * scs + 1) * e, false);
      lane_.before_touching(dst, std::size_t((rows - 1) * drs + (cols - 1) * dcs + 1) * e, true);
    }
    dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T b = beta ? *static_cast<const T*>(beta) : T(0);
      const bool add = b != T(0);
      const bool cj = conj && is_complex_v<T>;
      // The unit-stride side inner (both column-major: a column at a time).
      const bool by_rows = !(srs == 1 || drs == 1) && (scs == 1 || dcs == 1);
      const index_t outer = by_rows ? rows : cols, inner = by_rows ? cols : rows;
      const index_t so = by_rows ? srs : scs, si = by_rows ? scs : srs, dout = by_rows ? drs : dcs,
                    di = by_rows ? dcs : drs;
      for (index_t j = 0; j < outer; ++j) {
        const T* in = static_cast<const T*>(src) + j * so;
        T* out = static_cast<T*>(dst) + j * dout;
        if (!add && !cj && si == 1 && di == 1) {
          std::copy(in, in + inner, out);
          continue;
        }
        for (index_t i = 0; i < inner; ++i) {
          T v = in[i * si];
          if constexpr (is_complex_v<T>)
            if (cj) v = std::conj(v);
          T& o = out[i * di];
          o = add ? b * o + v : v;
        }
      }
    });
  }
  // One fused, threaded pass (node/fused.hpp), as the host engines' additions.
  void combine(index_t n, const Combination& c, Dtype dt) override {
    dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      up_to_four(c.n_in, [&](auto ni) {
        up_to_four(c.n_out, [&](auto no) {
          constexpr std::size_t NI = decltype(ni)::value, NO = decltype(no)::value;
          std::array<const T*, NI> in;
          std::array<T*, NO> out;
          std::array<bool, NO> acc;
          std::array<std::array<T, NI>, NO> coef;
          for (std::size_t t = 0; t < NI; ++t) in[t] = static_cast<const T*>(c.in[t]);
          for (std::size_t o = 0; o < NO; ++o) {
            out[o] = static_cast<T*>(c.out[o]), acc[o] = c.accumulate[o];
            for (std::size_t t = 0; t < NI; ++t) coef[o][t] = T(c.coef[o][t]);
          }
          fused_combine_flat<T, NI, NO>(n, in, out, acc, coef);
        });
      });
    });
  }
  void zero(void* p, std::size_t bytes, Lane lane) override {
    if (lane != Lane::compute) lane_.before_touching(p, bytes, true);
    if (bytes > 0) std::memset(p, 0, bytes);
  }
  // The product lets the comm lane's transfers progress while it runs (overlap.hpp).
  void gemm(const GemmCall& call) override {
    if (call.m <= 0 || call.n <= 0) return;
    const GemmCall c = with_checked_lds(call);
    if (lane_.idle() || c.ta != Op::N || c.tb != Op::N) return engine_.gemm_call(c);
    dispatch(c.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      gemm_with_progress<T>(engine_, c.m, c.n, c.k, *static_cast<const T*>(c.alpha), static_cast<const T*>(c.A),
                            c.lda, static_cast<const T*>(c.B), c.ldb, *static_cast<const T*>(c.beta),
                            static_cast<T*>(c.C), c.ldc, &lane_.requests());
    });
  }
  void hold_output_call(Dtype dt, void* C, index_t rows, index_t cols, index_t ld) override {
    engine_.hold_output_call(dt, C, rows, cols, ld);
  }
  void release_output() override { engine_.release_output(); }
  void comm_waits_for_compute() override {}  // the compute lane's work is done when queued
  void compute_waits_for_comm() override { lane_.settle(); }
  // A marker on the comm lane waits for the transfers posted before it alone (a later round's
  // stay in flight); any other marker, or one never recorded, for all of them.
  void mark(Lane lane, int i) override {
    at_.at(std::size_t(i)) = MPI_Wtime();
    posted_at_.at(std::size_t(i)) = lane == Lane::comm ? std::int64_t(lane_.posted()) : -1;
  }
  void wait_mark(Lane, int i) override {
    const std::int64_t p = posted_at_.at(std::size_t(i));
    if (p >= 0) lane_.wait_until(std::uint64_t(p));
    else lane_.settle();
  }
  double seconds_between(int from, int to) override {
    return std::max(0.0, at_.at(std::size_t(to)) - at_.at(std::size_t(from)));
  }
  void synchronize() override { lane_.settle(); }
  // The transfer lane's copies are done when queued.
  void upload(void* d, index_t ldd, const void* s, index_t lds, index_t r, index_t c, std::size_t e) override {
    copy(d, ldd, s, lds, r, c, e, Lane::transfer);
  }
  void download(void* d, index_t ldd, const void* s, index_t lds, index_t r, index_t c, std::size_t e) override {
    upload(d, ldd, s, lds, r, c, e);
  }
  void upload_async(void* d, index_t ldd, const void* s, index_t lds, index_t r, index_t c, std::size_t e) override {
    upload(d, ldd, s, lds, r, c, e);
  }
  void download_async(void* d, index_t ldd, const void* s, index_t lds, index_t r, index_t c, std::size_t e) override {
    upload(d, ldd, s, lds, r, c, e);
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
  // The emulation's budget, or the host's free memory when asked (the drop-in makes a host space
  // per call: reading /proc/meminfo there would cost every call).
  std::size_t free_bytes() const override {
    return emulated_ ? free_ - used_ : available_memory_bytes();
  }
  std::size_t engine_workspace(index_t m, index_t n, index_t k, Dtype dt) const override {
    return engine_.workspace_bytes(m, n, k, dt);
  }

 protected:
  void release(void* p) noexcept override {
    if (enforced_)
      if (const auto it = sizes_.find(p); it != sizes_.end()) used_ -= it->second, sizes_.erase(it);
    std::free(p);
  }
  void unpin_host(void*) noexcept override {}

 private:
  static void copy_2d(void* dst, index_t ld_dst, const void* src, index_t ld_src, index_t rows, index_t cols,
                      std::size_t elem) {
    if (rows <= 0 || cols <= 0) return;
    for (index_t j = 0; j < cols; ++j)
      std::memmove(static_cast<char*>(dst) + std::size_t(j * ld_dst) * elem,
                   static_cast<const char*>(src) + std::size_t(j * ld_src) * elem, std::size_t(rows) * elem);
  }
  // A comm- or transfer-lane copy waits for the comm lane's operations on the memory it touches.
  void in_order(const void* dst, index_t ld_dst, const void* src, index_t ld_src, index_t rows, index_t cols,
                std::size_t elem) {
    if (rows <= 0 || cols <= 0) return;
    lane_.before_touching(src, std::size_t((cols - 1) * ld_src + rows) * elem, false);
    lane_.before_touching(dst, std::size_t((cols - 1) * ld_dst + rows) * elem, true);
  }
  Engine& engine_;
  std::size_t free_;
  bool emulated_;
  // An emulation whose budget is enforced: the bytes of each live block, and their sum.
  bool enforced_;
  std::size_t used_ = 0;
  std::unordered_map<void*, std::size_t> sizes_;
  InFlight lane_;
  std::array<double, kMarks + kRunMarks> at_{};
  std::array<std::int64_t, kMarks + kRunMarks> posted_at_ = filled(-1);
  static std::array<std::int64_t, kMarks + kRunMarks> filled(std::int64_t v) {
    std::array<std::int64_t, kMarks + kRunMarks> a;
    a.fill(v);
    return a;
  }
};

}  // namespace

std::unique_ptr<DeviceSpace> make_emulated_device_space(Engine& engine, std::size_t free_bytes, bool enforced) {
  return std::make_unique<HostSpace>(engine, free_bytes, true, enforced);
}

std::unique_ptr<DeviceSpace> make_host_space(Engine& engine) {
  return std::make_unique<HostSpace>(engine, 0, false);
}

}  // namespace distmm
