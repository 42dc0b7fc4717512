// The distributed-algorithm interface. Each algorithm decides the layout of A (m x k), B (k x n)
// and C (m x n) over the ranks, multiplies with the local engine through Engine::gemm alone, and
// knows its own analytic communication and memory.
#pragma once
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include <array>
#include <optional>
#include <string_view>
#include <vector>

#include "../../node/engine.hpp"
#include "../../node/strassen_formulas.hpp"
#include "../../src/core/matrix.hpp"
#include "../../src/core/settings.hpp"
#include "../runtime/comm.hpp"
#include "../runtime/counting_space.hpp"
#include "../runtime/device_space.hpp"
#include "../runtime/partition.hpp"

namespace distmm {

struct GemmShape {
  index_t m = 0, n = 0, k = 0;
};

// The distributed algorithms (`--algo`); automatic picks among the classical ones.
enum class Algorithm { automatic, summa, cannon, dns, scalapack, caps, cuboid };
const char* to_string(Algorithm a);                      // "summa", ..., "auto"
std::optional<Algorithm> parse_algorithm(std::string_view name);

// CAPS's steps from the top of the recursion: BFS (7 groups in parallel), DFS (in turn), or
// dealt (a suffix of L such steps: the 7^L subproblems of the last L levels dealt round-robin to
// the ranks left, each multiplied whole by one rank; any rank count).
enum class CapsStep : char { bfs = 'B', dfs = 'D', dealt = 'X' };
using CapsSteps = std::vector<CapsStep>;
std::string to_string(const CapsSteps& steps);  // "DBB"
std::optional<CapsSteps> parse_caps_steps(std::string_view text);

struct AlgoOptions {
  index_t panel = 0;          // SUMMA panel width (0 = automatic)
  int grid_rows = 0;          // SUMMA/ScaLAPACK grid rows (0 = automatic)
  index_t scalapack_nb = 256; // ScaLAPACK block size
  std::optional<CapsSteps> caps_steps;  // CAPS: none = chosen by the cost model within memory
  const BilinearFormula* formula = nullptr;  // CAPS: the seven products (null: by the cost model)
  // auto may choose CAPS (Strassen's error growth, 12 per step, reported and verified as such);
  // off by default, so that a caller asking for a classical product (the PDGEMM drop-in) gets one.
  bool strassen_like_ok = false;
  std::array<int, 3> cuboid_grid{0, 0, 0};  // cuboid: pm x pn x pk (0: chosen by the cost model)
  int cuboid_steps = 0;                     // cuboid: sequential k-steps (0: by the memory limit)
  std::size_t mem_limit = 0;  // bytes per rank (0 = the machine's share)
  // The blocks will live on the rank's GPU (a device-resident run): algorithms size their steps
  // for the GPU engine (whole-k local products where memory allows) instead of the host's cache.
  bool device_resident = false;
  std::size_t device_limit = 0;  // device bytes per rank for the algorithm's buffers (0: no limit)
  // The caller will place A and B where DistAlgorithm::device_home() says (run()'s
  // device-resident run), so the algorithm plans its memory without a second copy of them. Off
  // (a streamed run's stages, whose inputs arrive in panel buffers): no homes.
  bool inputs_at_home = false;
  const Engine* engine = nullptr;  // CAPS: the local engine, for its memory estimate
  Dtype dtype = Dtype::f64;
};

// One rank's local blocks of A, B and C with their element type as a value.
struct LocalBlock {
  const void* data;
  index_t rows, cols, ld;
};
struct MultiplyCall {
  Dtype dtype;
  const void* alpha;
  LocalBlock A, B;
  const void* beta;
  void* C;
  index_t c_rows, c_cols, ldc;
  // A streamed run's first stage (run.cpp): only this rank's k-prefix (DistAlgorithm::k_prefix)
  // of A's columns and B's rows is on the device when the call starts; the rest arrives at this
  // DeviceSpace marker, which the algorithm waits for before it reads them. -1: all there.
  int rest_mark = -1;
};

// The first k-part of a rank's local operands: A's first a_cols columns and B's first b_rows
// rows, enough for the algorithm's first local product(s).
struct KPrefix {
  index_t a_cols = 0, b_rows = 0;
};

// Words and messages per rank under comm.hpp's counting convention, exact for this layout.
struct CommEstimate {
  double words_max = 0, words_mean = 0, messages_max = 0;
  double flops_max = 0;  // the busiest rank's local multiply flops (2 per multiply-add)
  // Elements the busiest rank streams through memory (read or written) around the products:
  // additions, layout copies; 0 where they are negligible next to the products, as for the
  // classical algorithms.
  double local_words_max = 0;
  // Work dealt at run time by the ranks' measured rates (CAPS's dealt steps with the balancer):
  // the busiest rank's flops matter less than the mean rank's plus one unit of work.
  bool balanced = false;
  double flops_mean = 0, flops_unit = 0;
};

class DistAlgorithm {
 public:
  virtual ~DistAlgorithm() = default;
  virtual std::string name() const = 0;
  virtual std::string layout() const = 0;  // grid shape and steps, for the report
  // This rank's pieces of A, B and C in the algorithm's layout (set by its constructor).
  const Piece& piece_a() const { return piece_a_; }
  const Piece& piece_b() const { return piece_b_; }
  const Piece& piece_c() const { return piece_c_; }
  // C = alpha A B + beta C on the local pieces (piece_a(), piece_b(), piece_c()).
  template <class T>
  void multiply(Engine& e, nondeduced_t<T> alpha, MatrixView<const T> A, MatrixView<const T> B,
                nondeduced_t<T> beta, MatrixView<T> C) {
    multiply_call(e, {dtype_of<T>(), &alpha, {A.data, A.rows, A.cols, A.ld},
                      {B.data, B.rows, B.cols, B.ld}, &beta, C.data, C.rows, C.cols, C.ld});
  }
  template <class T>
  void multiply(Engine& e, nondeduced_t<T> alpha, const Matrix<T>& A, const Matrix<T>& B,
                nondeduced_t<T> beta, Matrix<T>& C) {
    multiply<T>(e, alpha, A.view(), B.view(), beta, C.view());
  }
  virtual void multiply_call(Engine& e, const MultiplyCall& call) = 0;

  // Multiply in a memory space (device_space.hpp): A, B and C point into the space's memory
  // (this rank's GPU, or host memory: multiply() runs the same schedule in a host space), and
  // every buffer and transfer of the algorithm stays there. Algorithms without a schedule over a
  // space (ScaLAPACK) run only on the host (a GPU engine stages each local product).
  virtual bool runs_on_device() const { return false; }
  // Collective, once before the timed multiplies: the algorithm's communicators in the space.
  void prepare_device(DeviceSpace& space) {
    bind_space(space);
    prepare_comms(space);
  }
  virtual void multiply_device(DeviceSpace& space, const MultiplyCall& call) {
    (void)space, (void)call;
    throw std::logic_error(name() + " has no device-resident multiply");
  }
  // Where a device multiply can begin on the first k-part of its local operands while the rest
  // is still on the host link (MultiplyCall::rest_mark): that part, the same decision on every
  // rank. None: the algorithm needs its whole operands first.
  virtual std::optional<KPrefix> k_prefix() const { return std::nullopt; }
  // Device bytes the device-resident multiply allocates besides A, B and C: its buffers and
  // the engine's workspace for its largest local product.
  std::size_t device_extra_bytes(Dtype dt, const DeviceSpace& space) const {
    std::size_t bytes = 0;
    for (std::size_t b : device_buffer_bytes(dt)) bytes += b;
    const GemmShape g = device_gemm_shape();
    return bytes + space.engine_workspace(g.m, g.n, g.k, dt);
  }
  // Allocates those buffers (grow-only, kept across multiplies), so that a failure shows before
  // any transfer is queued and every rank can leave together; the multiply allocates nothing.
  void reserve_device(DeviceSpace& space, Dtype dt) {
    bind_space(space);
    const std::vector<std::size_t> bytes = device_buffer_bytes(dt);
    device_buffers_.resize(bytes.size());
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      for (Input in : {Input::a, Input::b})
        if (const auto h = device_home(in); h && h->buffer == i && device_buffers_[i].as<char>() &&
                                            device_buffers_[i].bytes() < bytes[i])
          throw std::logic_error(name() + ": growing a device buffer would move the inputs placed in it");
      reserve(space, device_buffers_[i], bytes[i]);
    }
  }
  // Where this rank's block of an input can live inside the device multiply's buffers (where
  // AlgoOptions::inputs_at_home): elements from buffer `buffer`'s start, leading dimension `ld`.
  // SUMMA's whole-k gathers land every owner's columns of A (rows of B) in one buffer, and a
  // block already in its place there is neither copied in each multiply nor held twice; a
  // multiply given the block there never writes it. None: the block is allocated apart. A caller
  // that passes the block elsewhere still gets the right product (it is copied in, over the home).
  // The address holds while the algorithm lives: reserve_device() never moves a buffer that holds
  // a home once allocated (it throws instead).
  enum class Input { a, b };
  struct DeviceHome {
    std::size_t buffer = 0, offset = 0;
    index_t ld = 1;
  };
  virtual std::optional<DeviceHome> device_home(Input which) const {
    (void)which;
    return std::nullopt;
  }
  // The home's address once reserve_device() has run (null before, or without a home).
  void* device_home_address(Input which, Dtype dt) const {
    const auto h = device_home(which);
    if (!h || h->buffer >= device_buffers_.size() || !device_buffers_[h->buffer].as<char>()) return nullptr;
    return device_buffers_[h->buffer].as<char>() + h->offset * size_of(dt);
  }
  // Peak bytes this rank holds during multiply(), inputs and outputs included.
  virtual std::size_t peak_bytes(Dtype dt, const Engine& e) const = 0;
  virtual CommEstimate analytic() const = 0;
  // The largest local product this rank's multiply hands its engine (--algo auto prices it at
  // the engine's rate for that size on a device).
  GemmShape largest_product() const { return device_gemm_shape(); }
  // False where the algorithm calls its own BLAS (ScaLAPACK): the engine is not used.
  virtual bool uses_engine() const { return true; }
  // Set when communication is not routed through comm.hpp (ScaLAPACK): no measured counts.
  virtual bool counts_words() const { return true; }
  // Strassen-like algorithms are compared with the Strassen lower bound, others the classical.
  virtual bool strassen_like() const { return false; }
  // Factor on the classical rounding-error bound (12 per Strassen step, Higham Thm. 23.3; 18 per
  // Winograd step, Sec. 23.2.2); the local engine's own factor multiplies it.
  virtual double error_growth() const { return 1.0; }

  // Why this algorithm (and grid) was chosen, when make_algorithm chose it (--algo auto).
  const std::string& selection() const { return selection_; }
  void set_selection(std::string why) { selection_ = std::move(why); }

  // Seconds this rank spent in each phase of the last multiply (CAPS's sums, exchanges and
  // combinations per level, cuboid's gathers and reduction, ...): the names are the same on
  // every rank, in the same order, so the run can take max and mean over ranks.
  virtual std::vector<std::string> phase_names() const { return {}; }
  const std::vector<double>& phase_seconds() const { return phase_seconds_; }

  // Called after each step of the multiply (Cannon's shifts, SUMMA's panels, ...), for progress.
  void set_progress(std::function<void(int done, int total)> f) { progress_ = std::move(f); }

 protected:
  void step_done(int done, int total) const {
    if (progress_ && !counting_) progress_(done, total);
  }
  void reset_phases() {
    if (!counting_) phase_seconds_.assign(phase_names().size(), 0.0);
  }
  // The algorithm's communicators in `space` (DeviceSpace::comm), made once; forget_comms()
  // drops them when the algorithm moves to another space.
  virtual void prepare_comms(DeviceSpace& space) { (void)space; }
  virtual void forget_comms() {}
  // The space that the algorithm's buffers and communicators belong to from now on: those of
  // another space are dropped first.
  void bind_space(DeviceSpace& space) {
    if (&space == space_) return;
    release_space();
    space_ = &space;
    host_clock_ = space.on_host();
  }
  void release_space() {
    device_buffers_.clear();
    forget_comms();
    space_ = nullptr;
  }
  const DeviceSpace* bound_space() const { return space_; }
  // The host space of `e`, where multiply() runs the algorithm's schedule (kept across calls).
  DeviceSpace& host_space(Engine& e) {
    if (!host_space_ || host_engine_ != &e) {
      if (host_space_ && space_ == host_space_.get()) release_space();
      host_space_ = make_host_space(e), host_engine_ = &e;
    }
    return *host_space_;
  }
  // The device multiply's buffers on this rank, bytes each for dt (0: not used), in the order
  // device_buffer(i) reaches them; and its largest local product (for the engine's workspace).
  virtual std::vector<std::size_t> device_buffer_bytes(Dtype dt) const {
    (void)dt;
    return {};
  }
  virtual GemmShape device_gemm_shape() const { return {}; }
  // The running device multiply's MultiplyCall::rest_mark (-1: its operands are all there).
  int rest_mark() const { return rest_mark_; }
  template <class T>
  T* device_buffer(std::size_t i) const {
    const std::vector<DeviceBlock>& b = counting_ ? *counting_ : device_buffers_;
    return i < b.size() ? b[i].template as<T>() : nullptr;
  }
  // The counts of the schedule that f(space) runs in a counting space (counting_space.hpp),
  // whose buffers device_buffer() reaches meanwhile, with phase times and progress off: an
  // algorithm's analytic counts from its schedule itself.
  template <class F>
  SpaceCounts counted(F&& f) const {
    CountingSpace cs;
    std::vector<DeviceBlock> bufs;
    for (std::size_t b : device_buffer_bytes(Dtype::f64)) bufs.push_back(cs.alloc(b));
    struct Counting {  // (only counting_ changes, and back, however the run ends)
      const std::vector<DeviceBlock>*& bufs;
      ~Counting() { bufs = nullptr; }
    } on{counting_ = &bufs};
    f(cs);
    return cs.counts;
  }
  // Times f() and adds it to phase `index` (of phase_names()), in a host space; on a GPU the
  // host's clock would time only the queueing.
  template <class F>
  void timed(std::size_t index, F&& f) {
    const double t0 = MPI_Wtime();
    f();
    if (host_clock_ && !counting_ && index < phase_seconds_.size()) phase_seconds_[index] += MPI_Wtime() - t0;
  }

 private:
  std::function<void(int, int)> progress_;
  std::string selection_;
  std::vector<double> phase_seconds_;
  // Declared before the buffers, so that they go back to the space before it goes.
  std::unique_ptr<DeviceSpace> host_space_;
  const Engine* host_engine_ = nullptr;
  DeviceSpace* space_ = nullptr;  // where device_buffers_ and the communicators live
  bool host_clock_ = true;
  std::vector<DeviceBlock> device_buffers_;  // reserve_device(); freed before the space

 protected:
  int rest_mark_ = -1;  // set around run_device by AlgorithmBase
  mutable const std::vector<DeviceBlock>* counting_ = nullptr;  // a counting run's buffers (counted())
  Piece piece_a_, piece_b_, piece_c_;
};

// An algorithm written once over a memory space: Derived::run<T>(DeviceSpace&, alpha, A, B,
// beta, C) is its schedule for host memory and for a GPU alike.
template <class D>
concept OneSchedule = D::kOneSchedule;
// An algorithm with a separate device-resident multiply: Derived::run_device<T>(DeviceSpace&, ...).
template <class D>
concept HasDeviceRun = D::kRunsOnDevice;

// Turns multiply_call (host memory) and multiply_device into Derived::run<T> (every algorithm
// takes every dtype): in the engine's host space where the algorithm has one schedule.
template <class Derived>
class AlgorithmBase : public DistAlgorithm {
 public:
  void multiply_call(Engine& e, const MultiplyCall& c) override {
    if constexpr (OneSchedule<Derived>)
      multiply_device(host_space(e), c);
    else
      typed(c, [&](auto... args) { static_cast<Derived*>(this)->run(e, args...); });
  }
  bool runs_on_device() const override { return OneSchedule<Derived> || HasDeviceRun<Derived>; }
  void multiply_device(DeviceSpace& s, const MultiplyCall& c) override {
    if constexpr (OneSchedule<Derived> || HasDeviceRun<Derived>) {
      struct Reset {  // the call's marker lasts as long as the call, however it ends
        int& mark;
        ~Reset() { mark = -1; }
      } reset{rest_mark_ = c.rest_mark};
      prepare_device(s);
      reserve_device(s, c.dtype);  // done before the first multiply: nothing to allocate
      if constexpr (OneSchedule<Derived>)
        typed(c, [&](auto... args) { static_cast<Derived*>(this)->run(s, args...); });
      else
        typed(c, [&](auto... args) { static_cast<Derived*>(this)->run_device(s, args...); });
    } else {
      DistAlgorithm::multiply_device(s, c);
    }
  }

 private:
  // f(alpha, A, B, beta, C) with the call's typed values and views.
  template <class F>
  static void typed(const MultiplyCall& c, F&& f) {
    dispatch(c.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      auto view = [](const LocalBlock& b) {
        return MatrixView<const T>{static_cast<const T*>(b.data), b.rows, b.cols, b.ld};
      };
      f(*static_cast<const T*>(c.alpha), view(c.A), view(c.B), *static_cast<const T*>(c.beta),
        MatrixView<T>{static_cast<T*>(c.C), c.c_rows, c.c_cols, c.ldc});
    });
  }
};

// Per-rank words and messages to the estimate's max and mean (over all P ranks).
struct EstimateAccumulator {
  CommEstimate e;
  int ranks = 0;
  void add(double words, double messages, double flops = 0, double local_words = 0) {
    e.words_max = std::max(e.words_max, words);
    e.messages_max = std::max(e.messages_max, messages);
    e.flops_max = std::max(e.flops_max, flops);
    e.local_words_max = std::max(e.local_words_max, local_words);
    e.words_mean += words;
    ++ranks;
  }
  CommEstimate done(int P) {
    e.words_mean /= std::max(P, 1);
    return e;
  }
  // The estimate of ranks 0..P-1: f(r, words, messages) adds up rank r's and returns its flops.
  template <class F>
  static CommEstimate over(int P, F&& f) {
    EstimateAccumulator acc;
    for (int r = 0; r < P; ++r) {
      double words = 0, msgs = 0;
      const double flops = f(r, words, msgs);
      acc.add(words, msgs, flops);
    }
    return acc.done(P);
  }
};

// The memory an algorithm sizes its steps or grid within, bytes per rank: in a device-resident
// run the GPU's share (device_limit, what is left after the operands, plus this rank's 1/P of
// A, B and C), else --mem-limit or the node's memory over its ranks.
double plan_memory_limit(const Comm& world, GemmShape s, const AlgoOptions& o);

std::vector<std::string> algorithm_names();  // including "auto"
// DISTMM_ENGINE and DISTMM_ALGO against the engines and the algorithms the drop-in can answer
// with (all but scalapack): checked here, where the lists are; throws SettingError.
void check_named_settings(const Settings& s);
// settings() with those names checked: what the CLI and the drop-in read.
Settings checked_settings();
// Throws UsageError when the world's rank count does not fit, naming the valid counts.
std::unique_ptr<DistAlgorithm> make_algorithm(Algorithm algo, const Comm& world, GemmShape shape,
                                              const AlgoOptions& opts);

}  // namespace distmm
