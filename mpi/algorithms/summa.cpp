// SUMMA (van de Geijn & Watts 1997; ScaLAPACK's outer-product scheme): on a pr x pc grid, for
// each panel of k, the owner column broadcasts its A panel along process rows and the owner row
// its B panel along process columns, then every rank accumulates C_ij += A_i,panel B_panel,j.
// The next panel's broadcasts are posted before the current multiply (double buffering).
#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "algorithms.hpp"
#include "classical.hpp"
#include "../runtime/grid.hpp"
#include "../runtime/pipeline.hpp"

namespace distmm {
namespace {

class Summa final : public ClassicalAlgorithm<Summa> {
 public:
  Summa(const Comm& world, GemmShape s, const AlgoOptions& o, int pr, int pc)
      : ClassicalAlgorithm(world, s, pr, pc),
        inputs_at_home_(o.inputs_at_home),
        grid_(world, {pr, pc}, false),
        i_(grid_.coord(0)),
        j_(grid_.coord(1)),
        pka_{s.k, pc},
        pkb_{s.k, pr} {
    row_ = grid_.along({1});
    col_ = grid_.along({0});
    set_blocks(i_, j_, pka_, pkb_);
    // Default panel: one owner's whole block of k (up to 4096). Wide panels mean few passes over
    // the local C, whose read-modify-write traffic is what limits many ranks sharing a memory bus.
    width_ = o.panel > 0 ? o.panel
                         : std::clamp<index_t>((s.k + std::max(pr, pc) - 1) / std::max(pr, pc),
                                               256, 4096);
    // On a GPU, whole owner blocks: a GPU engine's Strassen-like levels need large k, and the
    // host's reason for narrow panels (C's traffic through a shared memory bus) does not apply.
    // Halved while the double-buffered panels and the engine's workspace exceed the device limit.
    if (o.device_resident && o.panel <= 0) {
      const index_t mi = pm_.max_size(), nj = pn_.max_size();
      // Buffers of `words` and the engine's workspace for a product of depth w within the limit.
      auto fits = [&](double words, index_t w) {
        return o.device_limit == 0 || words * size_of(o.dtype) + (o.engine ? double(o.engine->workspace_bytes(mi, nj, w, o.dtype)) : 0.0) <= double(o.device_limit);
      };
      for (width_ = std::max<index_t>(s.k, 1); width_ > 256 && !fits(total_words(mi, nj, width_, false), width_);)
        width_ = (width_ + 1) / 2;
      // A Strassen-like engine gets one whole-k product where the gathered operands fit (two
      // half-k products take longer: docs/performance.md); where only A is gathered, gpu-winograd
      // starts on the rank's own columns (run_whole_k). With the inputs at home (device_home), a
      // gathered A (B) holds the rank's own block, which device_limit (what is left after the
      // operands' mean share: m k / P of them A's) counted already.
      const double home = !inputs_at_home_ ? 0.0
                          : ((broadcasts_a() ? double(s.m) : 0.0) + (broadcasts_b() ? double(s.n) : 0.0)) *
                                double(s.k) / double(pr * pc);
      whole_k_ = o.engine && o.engine->prefers_whole_k(mi, nj, s.k, o.dtype) && (broadcasts_a() || broadcasts_b()) &&
                 fits(double(total_words(mi, nj, s.k, true)) - home, s.k);
      if (whole_k_) width_ = std::max<index_t>(s.k, 1);
    }
    // a_owner: the grid column holding A's columns, b_owner: the grid row holding B's rows
    panels_ = common_panels(s.k, width_, [&](int j) { return pka_.start(j); }, [&](int i) { return pkb_.start(i); });
  }

  std::string name() const override { return "summa"; }
  std::string layout() const override {
    return grid_.shape() + " grid, " + std::to_string(panels_.size()) + " panels of <= " +
           std::to_string(width_) + (whole_k_ ? ", gathered into one whole-k product" : "");
  }
  index_t depth() const { return std::min(width_, s_.k); }  // of the widest panel
  double peak_words() const {
    const index_t mi = pm_.max_size(), nj = pn_.max_size();
    return double(mi * pka_.max_size() + pkb_.max_size() * nj + mi * nj + total_words(mi, nj, depth(), whole_k_));
  }

  PlacedComms place(int r) {
    i_ = r / grid_.dim(1), j_ = r % grid_.dim(1);
    return {{&row_, &dev_row_, j_, grid_.dim(1)}, {&col_, &dev_col_, i_, grid_.dim(0)}};
  }

  // This rank's columns of A and rows of B before the second k-part (first_rest_panel).
  std::optional<KPrefix> k_prefix() const override {
    const std::size_t t = first_rest_panel();
    if (t == 0) return std::nullopt;
    const index_t ks = panels_[t].k0;
    return KPrefix{std::clamp<index_t>(ks - pka_.start(j_), 0, pka_.size(j_)),
                   std::clamp<index_t>(ks - pkb_.start(i_), 0, pkb_.size(i_))};
  }
  std::vector<std::size_t> device_buffer_bytes(Dtype dt) const override {
    std::vector<std::size_t> bytes;
    for (index_t w : buffer_words(pm_.size(i_), pn_.size(j_), depth(), whole_k_))
      bytes.push_back(std::size_t(w) * size_of(dt));
    return bytes;
  }
  // This rank's blocks live where the whole-k gathers land them (gathered_place), so that
  // neither a copy in each multiply (docs/performance.md) nor a second copy of the block is needed.
  std::optional<DeviceHome> device_home(Input which) const override {
    if (!inputs_at_home_ || !whole_k_ || !(which == Input::a ? broadcasts_a() : broadcasts_b()))
      return std::nullopt;
    return gathered_place(which);
  }

  // The next panel's broadcasts on the comm lane during the current panel's product (pipeline.hpp).
  template <class T>
  void run(DeviceSpace& sp, T alpha, MatrixView<const T> A, MatrixView<const T> B, T beta, MatrixView<T> C) {
    if (whole_k_) return run_whole_k(sp, alpha, A, B, beta, C);
    const index_t mi = pm_.size(i_), nj = pn_.size(j_), ka0 = pka_.start(j_), kb0 = pkb_.start(i_);
    const bool along_rows = broadcasts_a(), along_cols = broadcasts_b();
    T *abuf[2] = {device_buffer<T>(0), device_buffer<T>(1)}, *bbuf[2] = {device_buffer<T>(2), device_buffer<T>(3)};
    StepOperands<T> ops[2];

    auto post = [&](std::size_t t, int slot) {
      const KPanel& p = panels_[t];
      StepOperands<T>& o = ops[slot];
      // The owner's columns of A (rows of B) read in place where they need not be contiguous.
      const T *own_a = A.data + (p.k0 - ka0) * A.ld, *own_b = B.data + (p.k0 - kb0);
      const bool a_in_place = j_ == p.a_owner && (!along_rows || A.ld == mi), b_in_place = i_ == p.b_owner && !along_cols;
      if (j_ == p.a_owner && !a_in_place) sp.copy(abuf[slot], mi, own_a, A.ld, mi, p.width, Lane::comm);
      if (i_ == p.b_owner && !b_in_place) sp.copy(bbuf[slot], p.width, own_b, B.ld, p.width, nj, Lane::comm);
      o = {a_in_place ? own_a : abuf[slot], std::max<index_t>(a_in_place ? A.ld : mi, 1),
           b_in_place ? own_b : bbuf[slot], std::max<index_t>(b_in_place ? B.ld : p.width, 1)};
      if (along_rows) dev_row_->broadcast(const_cast<T*>(o.a), mi * p.width, p.a_owner);
      if (along_cols) dev_col_->broadcast(const_cast<T*>(o.b), p.width * nj, p.b_owner);
    };

    // Operands of panels from `rest_from` on (beyond k_prefix) may still be on their way.
    const int rest = rest_mark();
    const std::size_t rest_from = rest >= 0 ? first_rest_panel() : panels_.size();
    auto held = sp.hold_output(C.data, mi, nj, C.ld);  // C may stay on a staging GPU across the panels
    const int steps = static_cast<int>(panels_.size());
    pipeline(
        sp, steps,
        [&](int t) {
          if (std::size_t(t) == rest_from) sp.wait_mark(Lane::comm, rest);  // its owner's operands on their way
          post(std::size_t(t), t % 2);
        },
        [&](int t) {
          if (std::size_t(t) == rest_from) sp.wait_mark(Lane::compute, rest);  // its owner's operands in place
          const StepOperands<T>& o = ops[t % 2];
          sp.gemm<T>(Op::N, Op::N, mi, nj, panels_[std::size_t(t)].width, alpha, o.a, o.lda, o.b, o.ldb,
                     t == 0 ? beta : T(1), C.data, C.ld);
          step_done(t + 1, steps);
        });
  }

 private:
  // Where the whole-k gathers land this rank's block: A's columns at their k offset in buffer 0
  // (ld mi), B's rows at theirs in buffer 1 (ld k).
  DeviceHome gathered_place(Input which) const {
    if (which == Input::b) return {1, std::size_t(pkb_.start(i_)), std::max<index_t>(s_.k, 1)};
    return {0, std::size_t(pka_.start(j_) * pm_.size(i_)), std::max<index_t>(pm_.size(i_), 1)};
  }

  // Every panel gathered on the comm lane (A's straight into its place, B's through one panel
  // buffer, since its rows are strided in B's column of blocks), then one product.
  template <class T>
  void run_whole_k(DeviceSpace& sp, T alpha, MatrixView<const T> A, MatrixView<const T> B, T beta, MatrixView<T> C) {
    const index_t mi = pm_.size(i_), nj = pn_.size(j_), k = s_.k, ka0 = pka_.start(j_), kb0 = pkb_.start(i_);
    const bool along_rows = broadcasts_a(), along_cols = broadcasts_b();
    T* afull = along_rows ? device_buffer<T>(0) : nullptr;
    T* bfull = along_cols ? device_buffer<T>(1) : nullptr;
    T* bpanel = along_cols ? device_buffer<T>(2) : nullptr;
    const int steps = static_cast<int>(panels_.size()) + 1;
    // This rank's columns of A (rows of B) already in their place (device_home): not copied there.
    auto at_home = [&](bool gathered, Input which, const T* p, index_t ld) {
      const DeviceHome h = gathered_place(which);
      return gathered && p == device_buffer<T>(h.buffer) + h.offset && ld == h.ld;
    };
    const bool a_at_home = at_home(along_rows, Input::a, A.data, A.ld), b_at_home = at_home(along_cols, Input::b, B.data, B.ld);
    // Panels [t0, t1) gathered on the comm lane (this rank's own A panels copied into place
    // there too, unless already done).
    auto gather = [&](std::size_t t0, std::size_t t1, bool own_a_in_place = false) {
      own_a_in_place = own_a_in_place || a_at_home;
      // A's panels land in place, so their broadcasts go in one group: with NCCL every owner
      // sends at once (on two GPUs both NVLink directions work, not one after the other).
      if (along_rows) {
        for (std::size_t t = t0; t < t1 && !own_a_in_place; ++t)
          if (const KPanel& p = panels_[t]; j_ == p.a_owner)
            sp.copy(afull + p.k0 * mi, mi, A.data + (p.k0 - ka0) * A.ld, A.ld, mi, p.width, Lane::comm);
        dev_row_->group_start();
        for (std::size_t t = t0; t < t1; ++t) dev_row_->broadcast(afull + panels_[t].k0 * mi, mi * panels_[t].width, panels_[t].a_owner);
        dev_row_->group_end();
      }
      for (std::size_t t = t0; t < t1; ++t) {
        const KPanel& p = panels_[t];
        if (along_cols) {
          if (i_ == p.b_owner) sp.copy(bpanel, p.width, B.data + (p.k0 - kb0), B.ld, p.width, nj, Lane::comm);
          dev_col_->broadcast(bpanel, p.width * nj, p.b_owner);
          if (!(b_at_home && i_ == p.b_owner)) sp.copy(bfull + p.k0, k, bpanel, p.width, p.width, nj, Lane::comm);
        }
        step_done(static_cast<int>(t + 1), steps);
      }
    };
    // The product over k's columns [k0, k0 + kw) (without a row grid A holds every k, without a
    // column grid B does).
    const index_t lda = std::max<index_t>(along_rows ? mi : A.ld, 1), ldb = std::max<index_t>(along_cols ? k : B.ld, 1);
    auto product = [&](index_t k0, index_t kw, T b0) {
      sp.gemm<T>(Op::N, Op::N, mi, nj, kw, alpha, (along_rows ? afull : A.data) + k0 * lda, lda,
                 (along_cols ? bfull : B.data) + k0, ldb, b0, C.data, C.ld);
    };
    const int rest = rest_mark();
    if (rest < 0 && along_rows && !along_cols) {
      // Only A is gathered: its own columns go into place on the compute lane, and the product
      // starts on them while the others arrive (gemm_pending_a: gpu-winograd's top level begins
      // with the two of its seven products that read one k-half of A alone, which on a 1 x 2
      // grid is this rank's). Other engines wait for the gather, as before.
      if (!a_at_home) sp.copy(afull + ka0 * mi, mi, A.data, A.ld, mi, pka_.size(j_), Lane::compute);
      sp.comm_waits_for_compute();  // the operands are ready, this rank's columns in place
      gather(0, panels_.size(), true);
      sp.gemm_pending_a({dtype_of<T>(), Op::N, Op::N, mi, nj, k, &alpha, afull, lda, B.data, ldb, &beta, C.data, C.ld},
                        ka0, ka0 + pka_.size(j_));
      step_done(steps, steps);
      return;
    }
    // Operands beyond k_prefix still on their way (a streamed first stage): the product of the
    // panels before `rest_from` first, while the rest comes in and is gathered.
    const std::size_t rest_from = rest >= 0 ? first_rest_panel() : panels_.size();
    const bool split = rest_from > 0 && rest_from < panels_.size();
    const index_t ks = split ? panels_[rest_from].k0 : k;  // the first part's k
    sp.comm_waits_for_compute();  // the operands are ready
    if (rest >= 0 && !split) sp.wait_mark(Lane::comm, rest), sp.wait_mark(Lane::compute, rest);
    for (int part = 0; part < (split ? 2 : 1); ++part) {
      if (part == 1) sp.wait_mark(Lane::comm, rest);
      gather(part == 0 ? 0 : rest_from, part == 0 && split ? rest_from : panels_.size());
      sp.compute_waits_for_comm();  // those panels arrived
      if (part == 1) sp.wait_mark(Lane::compute, rest);
      product(part == 0 ? 0 : ks, part == 0 ? ks : k - ks, part == 0 ? beta : T(1));
    }
    step_done(steps, steps);
  }

  bool broadcasts_a() const { return grid_.dim(1) > 1; }  // along process rows
  bool broadcasts_b() const { return grid_.dim(0) > 1; }  // along process columns
  // The device multiply's buffers, words each, for an mi x nj block of C: two panels of width w
  // each of A (when broadcast along rows) and of B (along columns); whole-k, A's row of blocks,
  // B's column of blocks and one panel of B to receive into. A panel that is not broadcast (one
  // grid column for A, one grid row for B) is read in place, so it needs no buffer (counting one
  // anyway halved a single GPU's whole-k product where the buffers would not fit).
  std::vector<index_t> buffer_words(index_t mi, index_t nj, index_t w, bool whole_k) const {
    const index_t a = broadcasts_a() ? mi : 0, b = broadcasts_b() ? nj : 0;
    if (whole_k) return {a * s_.k, s_.k * b, pkb_.max_size() * b};
    return {a * w, a * w, w * b, w * b};
  }
  index_t total_words(index_t mi, index_t nj, index_t w, bool whole_k) const {
    const std::vector<index_t> words = buffer_words(mi, nj, w, whole_k);
    return std::accumulate(words.begin(), words.end(), index_t(0));
  }
  // The panel where a streamed first stage's second k-part begins: the boundary nearest half of
  // k (panels never straddle an owner block); 0 where there is one panel.
  std::size_t first_rest_panel() const {
    auto nearer = [&](const KPanel& x, const KPanel& y) { return std::abs(2 * x.k0 - s_.k) < std::abs(2 * y.k0 - s_.k); };
    return panels_.size() < 2 ? 0 : std::size_t(std::min_element(panels_.begin() + 1, panels_.end(), nearer) - panels_.begin());
  }

  bool inputs_at_home_;  // the caller places A and B where device_home() says
  CartGrid grid_;
  int i_, j_;  // this rank's grid coordinates
  Comm row_, col_;
  std::unique_ptr<DeviceComm> dev_row_, dev_col_;
  Partition1D pka_, pkb_;
  index_t width_ = 512;
  bool whole_k_ = false;  // device-resident, Strassen-like engine: one gathered product
  std::vector<KPanel> panels_;
};

}  // namespace

std::unique_ptr<DistAlgorithm> make_summa(const Comm& world, GemmShape s, const AlgoOptions& o) {
  auto [pr, pc] = grid_2d_for(world.size(), s.m, s.n, o.grid_rows);
  return std::make_unique<Summa>(world, s, o, pr, pc);
}

}  // namespace distmm
