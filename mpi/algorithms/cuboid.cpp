// Cuboid: a classical algorithm that is communication-optimal on every shape and rank count,
// with the decomposition of COSMA (Kwasniewski, Kabic, Besta, VandeVondele, Solca & Hoefler,
// SC 2019) and of the 3-D algorithms it generalises (Agarwal et al. 1995; Solomonik & Demmel
// 2011). The m x n x k iteration space is cut into pm x pn x pk cuboids, one per rank, with
// pm pn pk <= P (a few ranks stay idle where P factors badly, e.g. a prime P, when the cost
// model says so); rank (i, j, l) multiplies A(i, l) B(l, j) into a partial sum of C(i, j).
//
// Layout (the algorithm's own, like DNS's): A(i, l) is split by columns over the pn ranks
// (i, *, l) that all need it, B(l, j) by columns over the pm ranks (*, j, l), and C(i, j) by
// columns over the pk ranks (i, j, *) that sum it. So every rank starts with 1/P of each matrix,
// and the whole communication is
//   allgather A(i, l) among (i, *, l), allgather B(l, j) among (*, j, l), multiply,
//   reduce-scatter C(i, j) among (i, j, *),
// words per rank  mk/(pm pk) (pn-1)/pn + kn/(pk pn) (pm-1)/pm + mn/(pm pn) (pk-1)/pk, which the
// grid choice minimises (with the flops per rank) and which meets the memory-independent lower
// bound's three cases (Demmel et al., IPDPS 2013) up to the grid's rounding.
//
// Sequential steps: when the gathered blocks do not fit the memory limit, k is cut into s steps
// (COSMA's sequential steps); each step gathers one k-slice of A(i, l) and B(l, j) while the
// previous one is multiplied, so the words stay the same and the memory falls by s. The C
// partial stays put across the steps. Step 0 starts on this rank's columns of B(l, j) as the others arrive.
#include <cmath>
#include <cstdint>

#include "algorithms.hpp"
#include "classical.hpp"
#include "cost_model.hpp"
#include "../runtime/pipeline.hpp"

namespace distmm {
namespace {

struct CuboidGrid {
  int pm = 1, pn = 1, pk = 1, steps = 1;
  int used() const { return pm * pn * pk; }
};

// Peak words a rank holds (a ceiling: blocks rounded up).
double cuboid_peak_words(GemmShape s, const CuboidGrid& g) {
  const double mi = std::ceil(double(s.m) / g.pm), nj = std::ceil(double(s.n) / g.pn),
               kl = std::ceil(double(s.k) / g.pk), kc = std::ceil(kl / g.steps);
  // own pieces, two gathered k-slices of A and B, B's send slice, C's partial and reduced columns
  const double own = mi * kl / g.pn + kl * nj / g.pm + mi * nj / g.pk;
  const double slices = (g.pn > 1 ? 2 * mi * kc : 0) + (g.pm > 1 ? 2 * kc * nj + kc * nj / g.pm : 0);
  const double partial = g.pk > 1 ? mi * nj + mi * nj / g.pk : 0;
  return own + slices + partial;
}

class Cuboid final : public ClassicalAlgorithm<Cuboid> {
 public:
  Cuboid(const Comm& world, GemmShape s, CuboidGrid g, const AlgoOptions& o)
      : ClassicalAlgorithm(world, s, g.pm, g.pn), g_(g), pk_{s.k, g.pk} {
    place(rank_);
    split_first_ = g.pm > 1 && (!o.engine || (!o.engine->prefers_whole_k(pm_.max_size(), pn_.max_size(), depth(), o.dtype) &&
                                              (o.device_resident || o.engine->capabilities().memory == Memory::host)));
    // Every rank takes part in the splits (collective); idle ranks get no communicator.
    a_comm_ = world.split(active_ ? i_ * g_.pk + l_ : -1, j_);
    b_comm_ = world.split(active_ ? j_ * g_.pk + l_ : -1, i_);
    c_comm_ = world.split(active_ ? i_ * g_.pn + j_ : -1, l_);
    if (!active_) return;
    // A(i, l): this rank's share of each k-step's columns; B(l, j) and C(i, j): its share of the
    // columns, among the pm ranks (*, j, l) and the pk ranks (i, j, *).
    for (int c = 0; c < g_.steps && pm_.size(i_) > 0; ++c) {
      const index_t kc = step_size(l_, c), w = share(kc, g_.pn, j_);
      if (w > 0) piece_a_.col_runs.push_back({pk_.start(l_) + step_begin(l_, c) + share_begin(kc, g_.pn, j_), w});
    }
    if (!piece_a_.col_runs.empty()) piece_a_.row_runs.push_back({pm_.start(i_), pm_.size(i_)});
    const Partition1D nb{pn_.size(j_), g_.pm}, nc{pn_.size(j_), g_.pk};
    piece_b_ = Piece::block(pk_.start(l_), pk_.size(l_), pn_.start(j_) + nb.start(i_), nb.size(i_));
    piece_c_ = Piece::block(pm_.start(i_), pm_.size(i_), pn_.start(j_) + nc.start(l_), nc.size(l_));
  }

  std::string name() const override { return "cuboid"; }
  std::vector<std::string> phase_names() const override {
    return {"packing B's k-slices", "waiting for the gathers of A and B", "local multiply",
            "reduce-scatter of C"};
  }
  std::string layout() const override {
    std::string idle = g_.used() < P_ ? ", " + std::to_string(P_ - g_.used()) + " ranks idle" : "";
    return std::to_string(g_.pm) + "x" + std::to_string(g_.pn) + "x" + std::to_string(g_.pk) +
           " cuboids (m x n x k)" + idle + ", " + std::to_string(g_.steps) + " k-step" +
           (g_.steps > 1 ? "s" : "");
  }
  // The first k-step's slices; one step alone (where nothing is gathered) is cut at half its k.
  std::optional<KPrefix> k_prefix() const override {
    if (g_.steps == 1 && (g_.pm > 1 || g_.pn > 1)) return std::nullopt;  // the gathers need the whole k
    // none where the first part is empty on every rank (k at most 1 per layer)
    if ((g_.steps > 1 ? share(pk_.max_size(), g_.steps, 0) : pk_.max_size() / 2) == 0) return std::nullopt;
    if (!active_) return KPrefix{};
    const index_t kc = g_.steps > 1 ? step_size(l_, 0) : pk_.size(l_) / 2;
    return KPrefix{share(kc, g_.pn, j_), kc};
  }
  index_t depth() const { return (pk_.max_size() + g_.steps - 1) / g_.steps; }  // of the largest k-step
  double peak_words() const { return cuboid_peak_words(s_, g_); }

  PlacedComms place(int r) {
    active_ = r < g_.used();
    std::tie(i_, j_, l_) = active_ ? std::tuple{r / (g_.pn * g_.pk), r / g_.pk % g_.pn, r % g_.pk} : std::tuple{0, 0, 0};
    PlacedComms used;  // (none on an idle rank)
    if (active_ && g_.pn > 1) used.push_back({&a_comm_, &dev_a_, j_, g_.pn});
    if (active_ && g_.pm > 1) used.push_back({&b_comm_, &dev_b_, i_, g_.pm});
    if (active_ && g_.pk > 1) used.push_back({&c_comm_, &dev_c_, l_, g_.pk});
    return used;
  }

  // Per slot (two, for the double-buffered k-steps): A(i, l)'s gathered k-slice, its padded
  // parts (only where the parts differ and travel padded) and this rank's part packed for
  // sending; the same for B; then C's partial sum, its padded parts and this rank's reduced
  // columns. Buffer (which, slot) is device_buffer(2 which + slot), C's at 12, 13, 14.
  std::vector<std::size_t> device_buffer_bytes(Dtype dt) const override {
    std::vector<std::size_t> b(15, 0);
    if (!active_) return b;
    const bool pads = !bound_space() || !bound_space()->takes_uneven_parts();
    const index_t mi = pm_.size(i_), nj = pn_.size(j_), kmax = step_size(l_, 0);
    const bool uneven_a = step_size(l_, 0) % g_.pn != 0 || step_size(l_, g_.steps - 1) % g_.pn != 0;  // (two step sizes)
    // At `at`, `at + gap` and `at + 2 gap`: a rows x cols block cut by columns into `parts`
    // parts, the parts padded to the widest, and one part packed (A's where it is uneven or A
    // has a leading dimension).
    auto parts_of = [&](std::size_t at, std::size_t gap, index_t rows, index_t cols, int parts, bool uneven) {
      if (parts < 2) return;
      const index_t wmax = share(cols, parts, 0);
      b[at] = std::size_t(rows * cols) * size_of(dt);
      if (uneven && pads) b[at + gap] = std::size_t(rows * wmax * parts) * size_of(dt);
      b[at + 2 * gap] = std::size_t(rows * wmax) * size_of(dt);
    };
    for (int slot = 0; slot < 2; ++slot)
      parts_of(0 + slot, 2, mi, kmax, g_.pn, uneven_a), parts_of(6 + slot, 2, kmax, nj, g_.pm, nj % g_.pm != 0);
    parts_of(12, 1, mi, nj, g_.pk, nj % g_.pk != 0);
    return b;
  }

  // One schedule for host and device memory: the gathers of the next k-step on the comm lane
  // while this step's product runs on the compute lane. NCCL's gathers and reductions take
  // equal parts, so between GPUs uneven parts travel padded to the largest (the words counted
  // are the unpadded ones, as MPI's v-collectives move them on the host) and are compacted by a
  // copy.
  template <class T>
  void run(DeviceSpace& sp, T alpha, MatrixView<const T> A, MatrixView<const T> B, T beta, MatrixView<T> C) {
    reset_phases();
    if (!active_) return;
    const index_t mi = pm_.size(i_), nj = pn_.size(j_);
    const bool gather_a = g_.pn > 1, gather_b = g_.pm > 1, reduce_c = g_.pk > 1;
    const bool pads = !sp.takes_uneven_parts();
    const index_t wc_max = share(nj, g_.pk, 0);  // padded part width (the first part is the largest)
    // which: 0 A gathered, 1 A padded, 2 A sent, 3 B gathered, 4 B padded, 5 B sent
    auto buf = [&](int which, int slot) { return device_buffer<T>(std::size_t(2 * which + slot)); };
    // Gathers `parts` parts of rows x (share(cols, parts, q)) columns from `mine` (this rank's
    // part, leading dimension ld) into `out` = buf(which, slot) (rows x cols, contiguous, which
    // it returns), through `send` (packed) and, where the parts differ and travel padded to the
    // first part's width, `padded`.
    auto gather = [&](DeviceComm& dc, int parts, int me, index_t rows, index_t cols, const T* mine, index_t ld,
                      int which, int slot, std::size_t pack_phase) {
      T *out = buf(which, slot), *padded = buf(which + 1, slot), *send = buf(which + 2, slot);
      const index_t wmax = share(cols, parts, 0), w = share(cols, parts, me);
      const bool even = cols % parts == 0 || !pads;
      if (ld != rows || !even) {  // this rank's part, packed (and padded)
        timed(pack_phase, [&] { sp.copy(send, std::max<index_t>(rows, 1), mine, ld, rows, w, Lane::comm); });
        mine = send;
      }
      if (pads) dc.all_gather_parts(mine, even ? out : padded, Partition1D{cols, parts}.counts(rows));
      else dc.all_gather_v(mine, out, Partition1D{cols, parts}.counts(rows));
      for (int q = 0; !even && q < parts; ++q)
        sp.copy(out + rows * share_begin(cols, parts, q), std::max<index_t>(rows, 1), padded + q * rows * wmax,
                std::max<index_t>(rows, 1), rows, share(cols, parts, q), Lane::comm);
      return out;
    };

    StepOperands<T> ops[2];
    index_t a_col0 = 0;
    auto post = [&](int c, int slot) {
      const index_t kc = step_size(l_, c), k0 = step_begin(l_, c);
      StepOperands<T>& o = ops[slot];
      o = {A.data + a_col0 * A.ld, A.ld, B.data + k0, B.ld};  // in place where not gathered
      if (gather_a)
        o.a = gather(*dev_a_, g_.pn, j_, mi, kc, o.a, A.ld, 0, slot, kNoPhase), o.lda = std::max<index_t>(mi, 1);
      a_col0 += share(kc, g_.pn, j_);
      if (c == 0) sp.mark(Lane::comm, 0);  // A(i, l) in, for step 0's first product
      if (gather_b)  // rows k0..k0+kc of this rank's columns of B(l, j)
        o.b = gather(*dev_b_, g_.pm, i_, kc, nj, o.b, B.ld, 3, slot, 0), o.ldb = std::max<index_t>(kc, 1);
      if (c == 0) sp.mark(Lane::comm, 1);
    };

    T* cp = reduce_c ? device_buffer<T>(12) : C.data;
    const index_t ldc = reduce_c ? std::max<index_t>(mi, 1) : C.ld;
    // Operands beyond the first k-part (k_prefix) still on their way: steps after the first
    // wait for them, and one step alone is cut in two products at its prefix.
    const int rest = rest_mark();
    const std::optional<KPrefix> part = rest >= 0 ? k_prefix() : std::nullopt;
    const index_t cut = part && g_.steps == 1 ? part->b_rows : -1;
    pipeline(
        sp, g_.steps,
        [&](int c) {
          if (rest >= 0 && (c > 0 || !part)) sp.wait_mark(Lane::comm, rest);
          if (rest >= 0 && c == 0 && !part) sp.wait_mark(Lane::compute, rest);
          post(c, c % 2);
        },
        [&](int c) {
          const T first = c == 0 ? (reduce_c ? T(0) : beta) : T(1);
          const StepOperands<T>& o = ops[c % 2];
          const index_t kc = step_size(l_, c);
          // Step 0 (mark 0: A(i, l) in) starts on this rank's own columns of B(l, j) while the rest arrive.
          const index_t b0 = split_first_ && c == 0 ? share_begin(nj, g_.pm, i_) : 0, bw = split_first_ && c == 0 ? share(nj, g_.pm, i_) : 0;
          const index_t k1 = std::max<index_t>(cut, 0);  // the first part's product (cut > 0), then the rest's
          // C's columns c0..c0+w; the parts read the same op(A), so the engine may keep what it
          // derives from it (an emulation's slices) from one part to the next.
          const int parts = (bw > 0) + (b0 > 0) + (nj - b0 - bw > 0);
          int part = 0;
          auto columns = [&](index_t c0, index_t w, const T* b, index_t ldb, T beta1) {
            if (w <= 0) return;
            const ReuseOfA reuse{part + 1 < parts, part > 0};
            ++part;
            sp.gemm<T>(Op::N, Op::N, mi, w, kc - k1, alpha, o.a + k1 * o.lda, o.lda, b + k1, ldb, beta1, cp + c0 * ldc, ldc, reuse);
          };
          timed(2, [&] {
            if (cut > 0) sp.gemm<T>(Op::N, Op::N, mi, nj, cut, alpha, o.a, o.lda, o.b, o.ldb, first, cp, ldc);
            if (rest >= 0 && (c > 0 || cut >= 0)) sp.wait_mark(Lane::compute, rest);
            columns(b0, bw, B.data, B.ld, first);  // (k1 = 0 where split)
          });
          if (split_first_ && c == 0) timed(1, [&] { sp.wait_mark(Lane::compute, 1); });
          timed(2, [&] {
            const T beta1 = cut > 0 ? T(1) : first;
            columns(0, b0, o.b, o.ldb, beta1), columns(b0 + bw, nj - b0 - bw, o.b + (b0 + bw) * o.ldb, o.ldb, beta1);
          });
          step_done(c + 1, g_.steps + (reduce_c ? 1 : 0));
        },
        [&, waited = 0](auto&& wait) mutable { timed(1, [&] { split_first_ && waited++ == 0 ? sp.wait_mark(Lane::compute, 0) : wait(); }); });
    if (!reduce_c) return;
    // Sum the pk partials and keep this rank's columns: C = sum + beta C.
    timed(3, [&] {
      sp.comm_waits_for_compute();
      const bool padded = pads && nj % g_.pk != 0;  // parts padded to the widest
      for (int q = 0; padded && q < g_.pk; ++q)
        sp.copy(device_buffer<T>(13) + q * mi * wc_max, std::max<index_t>(mi, 1), cp + mi * share_begin(nj, g_.pk, q),
                std::max<index_t>(mi, 1), mi, share(nj, g_.pk, q), Lane::comm);
      T* send = padded ? device_buffer<T>(13) : cp;
      if (pads) dev_c_->reduce_scatter_parts(send, device_buffer<T>(14), Partition1D{nj, g_.pk}.counts(mi));
      else dev_c_->reduce_scatter_v(send, device_buffer<T>(14), Partition1D{nj, g_.pk}.counts(mi));
      sp.compute_waits_for_comm();
    });
    sp.scale_add<T>(C.data, C.ld, device_buffer<T>(14), std::max<index_t>(mi, 1), mi, share(nj, g_.pk, l_), T(1), beta);
    step_done(g_.steps + 1, g_.steps + 1);
  }

 private:
  // Part q of `parts` of n (the first n % parts one larger): the split of every block.
  static index_t share(index_t n, int parts, int q) { return Partition1D{n, parts}.size(q); }
  static index_t share_begin(index_t n, int parts, int q) { return Partition1D{n, parts}.start(q); }

  // k-steps of layer l: step c covers [step_begin, step_begin + step_size) of the block's k.
  index_t step_size(int l, int c) const { return share(pk_.size(l), g_.steps, c); }
  index_t step_begin(int l, int c) const { return share_begin(pk_.size(l), g_.steps, c); }

  CuboidGrid g_;
  Partition1D pk_;
  // Step 0 on B's own columns first (B gathered): not under Strassen levels (slower on halves),
  // nor where a GPU stages each product from host memory (A copied again per part).
  bool active_ = false, split_first_ = true;
  int i_ = 0, j_ = 0, l_ = 0;
  Comm a_comm_, b_comm_, c_comm_;
  std::unique_ptr<DeviceComm> dev_a_, dev_b_, dev_c_;  // destroyed before their Comms
  static constexpr std::size_t kNoPhase = ~std::size_t(0);
};

// {words, seconds} of a grid's busiest rank (blocks rounded up): its words, gathered (A and B)
// and reduced (C), and its time from its flops, words and messages (cost_model.hpp). A reduced word
// costs its transfer and the pass that adds it in (read, add, write: priced as a second
// transfer), which the ring reduce-scatter pays at every step.
std::pair<double, double> grid_cost(GemmShape s, const CuboidGrid& g, const MachineModel& mm, std::size_t elem) {
  const double mi = std::ceil(double(s.m) / g.pm), nj = std::ceil(double(s.n) / g.pn),
               kl = std::ceil(double(s.k) / g.pk);
  const double gathered = mi * kl * (g.pn - 1) / g.pn + kl * nj * (g.pm - 1) / g.pm,
               reduced = mi * nj * (g.pk - 1) / g.pk;
  const double msgs = g.steps * double((g.pn - 1) + (g.pm - 1)) + (g.pk - 1);
  return {gathered + reduced, mm.seconds(2 * mi * nj * kl, (gathered + 2 * reduced) * double(elem), msgs)};
}
}  // namespace

std::unique_ptr<DistAlgorithm> make_cuboid(const Comm& world, GemmShape s, const AlgoOptions& o) {
  const int P = world.size();
  const std::size_t elem = size_of(o.dtype);
  const MachineModel mm = machine_model_for(world, o.device_resident, o.engine ? o.engine->name() : "", o.dtype, double(s.m), double(s.n), double(s.k));
  const double limit = plan_memory_limit(world, s, o);  // the GPU's share when device-resident
  if (o.cuboid_grid[0] > 0) {  // the user's grid, checked
    CuboidGrid g{o.cuboid_grid[0], o.cuboid_grid[1], o.cuboid_grid[2], std::max(o.cuboid_steps, 1)};
    // the product in 64 bits: the sides are anything a user typed
    const std::int64_t used = std::int64_t(g.pm) * g.pn * g.pk;
    if (g.pm < 1 || g.pn < 1 || g.pk < 1 || used > P)
      throw UsageError("--cuboid-grid " + std::to_string(g.pm) + "x" + std::to_string(g.pn) + "x" +
                       std::to_string(g.pk) + " needs " + std::to_string(used) + " ranks but " +
                       std::to_string(P) + " run: use a grid of at most " + std::to_string(P) + (P == 1 ? " rank" : " ranks"));
    return std::make_unique<Cuboid>(world, s, g, o);
  }
  std::vector<CuboidGrid> grids;
  std::vector<double> seconds, words;
  // Every grid of P or slightly fewer ranks (idle ranks pay off where P factors badly), no
  // dimension cut finer than it is long; the fewest k-steps that fit the memory.
  const int lowest = std::max(1, int(std::floor(0.75 * P)));
  for (int used = P; used >= 1; --used) {
    if (used < lowest && !grids.empty()) break;  // tiny shapes may fit only a few ranks
    for (int pm = 1; pm <= used; ++pm) {
      if (used % pm || pm > std::max<index_t>(s.m, 1)) continue;
      for (int pn = 1; pn <= used / pm; ++pn) {
        if ((used / pm) % pn || pn > std::max<index_t>(s.n, 1)) continue;
        const int pk = used / pm / pn;
        if (pk > std::max<index_t>(s.k, 1)) continue;
        CuboidGrid g{pm, pn, pk, std::max(o.cuboid_steps, 1)};
        const index_t kl = std::max<index_t>((s.k + pk - 1) / pk, 1);
        while (o.cuboid_steps == 0 && g.steps < kl && cuboid_peak_words(s, g) * double(elem) > limit)
          g.steps *= 2;
        g.steps = int(std::min<index_t>(g.steps, kl));
        const auto [w, t] = grid_cost(s, g, mm, elem);
        grids.push_back(g), seconds.push_back(t), words.push_back(w);
      }
    }
  }
  // Communication-optimal first: of the grids predicted within kWordsFirst of the fastest, the
  // one that moves the fewest words (on a prime P often a grid of P - 1 ranks, where P ranks in
  // a line would move several times the lower bound).
  return std::make_unique<Cuboid>(world, s, grids[words_first_choice(seconds, words)], o);
}

}  // namespace distmm
