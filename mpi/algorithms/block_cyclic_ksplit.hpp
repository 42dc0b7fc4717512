// The k-split schedule on ScaLAPACK's block-cyclic layout itself (the answer of the drop-in,
// mpi/scalapack/pxgemm.cpp, and of MultiplyPlan to k-dominant N x N calls whose operands line
// up; chosen by block_cyclic_direct.cpp).
//
// SUMMA on the block-cyclic grid makes every rank receive its process row's share of A and
// its process column's share of B over the whole of k: (m/pr + n/pc) k words, 6.4x the lower
// bound at 4096 x 4096 x 65536 on 4 x 4. When k dominates, the communication-optimal plan is
// the 1 x 1 x P cuboid (each rank one P-th of k, the partial C summed over the ranks; Demmel
// et al., "Communication-optimal parallel recursive rectangular matrix multiplication", 2013,
// and COSMA): words per rank about m k / P (A) + k n / P (B) + m n (C). This runs that plan
// without redistributing anything first:
//   - the k indices that process column c holds of A are split into pr equal parts, one per
//     rank (r, c) of that column: each rank already holds its own rows of A for its part, and
//     gets the other rows from its column-mates (one message per part, sent in place when A's
//     local rows are contiguous);
//   - B's rows for that part live on one process row (per run of k): the rank fetches them,
//     one process column's columns at a time, double-buffered, in a staggered order (on a
//     square grid no rank serves two fetches of one step);
//   - each fetched column block gives pr pieces of the partial C (one per process row's rows of
//     A, kept in the order they arrived: rows and columns in process order, so each piece is
//     exactly what one rank owns of C); they go straight to their owners while the next block
//     is multiplied, and each owner adds the P pieces it gets: C = beta C + sum.
// Every piece is a whole BLAS product of (m / pr) x (n / pc) x (k / P); the transfers progress
// during them (gemm_with_progress).
//
// Balancing (pc >= 3). Equal products do not take equal times: on a shared 16-core host (the
// H100 machine, docs/performance.md) single-threaded DGEMMs on the 16 cores at once took
// 0.54-0.98 s for the same work, the same cores slow for several seconds, and the call ends
// with the slowest rank. So after its first step each rank tells the others its rate (one
// MPI_Iallgather), and every rank derives the same plan from the rates (ksplit_plan, over the
// rate balancer CAPS uses too, mpi/runtime/rate_balancer.hpp): pieces of the slowest ranks'
// last steps go to the ranks predicted to finish first. A moved piece's operands come from
// where they live (A's rows from their owner, B's block from its owner), its product goes to the
// owner of its block of C as the victim's would have; everything that depends on the plan (the
// steps whose pieces may move) starts only after the plan is known.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <memory>
#include <vector>

#include "../../node/engine.hpp"
#include "../../src/core/matrix.hpp"
#include "../runtime/comm.hpp"
#include "../runtime/overlap.hpp"
#include "../runtime/rate_balancer.hpp"

namespace distmm {

// A run of k: local columns a0.. of A on process column qa, local rows b0.. of B on process row
// qb, `width` indices.
struct KRun {
  int qa, qb;
  index_t a0, b0, width;
};

struct KSplitLayout {
  int nprow = 1, npcol = 1, myrow = 0, mycol = 0;
  std::vector<index_t> rows;  // rows[r]: the rows of sub(A) and sub(C) process row r holds
  std::vector<index_t> cols;  // cols[c]: the columns of sub(B) and sub(C) process column c holds
  std::vector<std::vector<KRun>> parts;  // parts[rank]: its share of k, in its multiply order
  int rank(int r, int c) const { return r * npcol + c; }
  index_t width(int rank) const {
    index_t w = 0;
    for (const KRun& s : parts[static_cast<std::size_t>(rank)]) w += s.width;
    return w;
  }
};

// Splits k's runs (as k_panels lists them) among the ranks: process column c's runs, grouped
// by the process row holding their B rows, cut into nprow equal parts.
inline KSplitLayout ksplit_layout(int nprow, int npcol, int myrow, int mycol,
                                  std::vector<index_t> rows, std::vector<index_t> cols,
                                  const std::vector<KRun>& runs) {
  KSplitLayout L{nprow, npcol, myrow, mycol, std::move(rows), std::move(cols), {}};
  L.parts.resize(static_cast<std::size_t>(nprow * npcol));
  for (int c = 0; c < npcol; ++c) {
    std::vector<KRun> mine;
    for (const KRun& r : runs)
      if (r.qa == c) mine.push_back(r);
    std::stable_sort(mine.begin(), mine.end(), [](const KRun& x, const KRun& y) { return x.qb < y.qb; });
    index_t total = 0;
    for (const KRun& r : mine) total += r.width;
    index_t at = 0;  // position in the concatenation of `mine`
    std::size_t i = 0;
    index_t used = 0;  // of mine[i]
    for (int r = 0; r < nprow; ++r) {
      const index_t end = total * (r + 1) / nprow;
      auto& part = L.parts[static_cast<std::size_t>(L.rank(r, c))];
      while (at < end) {
        const KRun& s = mine[i];
        const index_t w = std::min(end - at, s.width - used);
        part.push_back({s.qa, s.qb, s.a0 + used, s.b0 + used, w});
        at += w, used += w;
        if (used == s.width) ++i, used = 0;
      }
    }
  }
  return L;
}

// Words rank `me` receives (for choosing a schedule).
inline double ksplit_words(const KSplitLayout& L, int me) {
  const int my_r = me / L.npcol, my_c = me % L.npcol;
  const index_t kr = L.width(me);
  index_t m = 0, n = 0;
  for (index_t r : L.rows) m += r;
  for (index_t c : L.cols) n += c;
  const double a = double(m - L.rows[my_r]) * double(kr);
  double b = 0;
  for (const KRun& s : L.parts[static_cast<std::size_t>(me)])
    b += double(s.width) * double(n - (s.qb == my_r ? L.cols[my_c] : 0));
  double c = 0;
  for (int r = 0; r < L.nprow * L.npcol; ++r)
    if (r != me && L.width(r) > 0) c += double(L.rows[my_r]) * double(L.cols[my_c]);
  return a + b + c;
}

// The step at which rank t (of a pr x pc grid) fetches process column c's block of B: each
// rank starts at its own column plus its row, so that at every step the fetches of a process
// column's ranks go to different sources.
inline int ksplit_step(int t, int c, int pc) { return ((c - t % pc - t / pc) % pc + pc) % pc; }

// The column of C that rank t's step `step` multiplies into (its B block).
inline int ksplit_col(const KSplitLayout& L, int t, int step) {
  return (t % L.npcol + t / L.npcol + step) % L.npcol;
}
inline double ksplit_piece_flops(const KSplitLayout& L, int t, int r, int c) {
  return double(L.rows[static_cast<std::size_t>(r)]) * double(L.cols[static_cast<std::size_t>(c)]) *
         double(L.width(t));
}

// The balancer's checkpoints. At each the ranks exchange reports (KReport), and the plan made
// from them moves pieces of the steps from `first` on; a rank that may give pieces knows the
// plan before it starts step `first`. The first report comes halfway through step 0, so that
// a rank up to about three times faster than the slowest does not wait for the first plan
// (it has a step and a half to do before step 2); the second (four or more steps) comes after
// step pc - 3 and corrects the first for the last step alone, from rates measured over more of
// the run: the rates drift (on the H100 host one core's time for equal DGEMMs moved by 10-15%
// from one second to the next). Only the ranks the first plan left late may give pieces at the
// second, and only they wait for it; the others go on.
struct KCheckpoint {
  int first;
};
inline std::vector<KCheckpoint> ksplit_checkpoints(int pc) {
  std::vector<KCheckpoint> v;
  if (pc < 3) return v;
  v.push_back({std::max(2, pc - 2)});
  if (pc >= 4) v.push_back({pc - 1});
  return v;
}
// The step after which the second report is posted (the first: halfway through step 0).
inline int ksplit_second_report(int pc) { return pc - 3; }

// A rank's report: seconds per flop over its products so far (0: unknown, and then it neither
// gives nor takes), seconds since its first step started, and the flops it still has to do
// before the checkpoint's step `first`.
struct KReport {
  double sec_per_flop = 0, elapsed = 0, flops_before = 0;
};

// A piece of rank `victim`'s step `step` (the rows of process row `row`) computed by `thief`.
struct KMove {
  int victim, step, row, thief;
};

// The balancer's plan at checkpoint `cp`, the same on every rank (a function of the layout, the
// reports and the earlier checkpoints' moves alone): rate_balance (mpi/runtime/rate_balancer.hpp)
// over the pieces. A rank's predicted finish: it reaches step cp.first after what it still has
// before it, or when the plan is known (the last report) if later, then computes what is left of
// its own pieces from cp.first on and the pieces it has taken (and receives their words at
// sec_per_word). The pieces a rank (among those `may_give` allows, all when null) may give: from
// step cp.first on, the last computed first, not a piece of its own block of C; a piece's owner
// may not take it, nor a rank without a share of k, and at most max_per_thief pieces each over
// all checkpoints. `predicted` (optional) gets every rank's finish as predicted after the moves.
inline std::vector<KMove> ksplit_plan(const KSplitLayout& L, KCheckpoint cp,
                                      const std::vector<KReport>& reports,
                                      const std::vector<KMove>& earlier, double sec_per_word,
                                      int max_per_thief, const std::vector<char>* may_give = nullptr,
                                      std::vector<double>* predicted = nullptr) {
  const int pr = L.nprow, pc = L.npcol, P = pr * pc;
  if (pc < 3 || P < 2) return {};
  auto words_of = [&](int v, int r, int c) {
    return double(L.rows[r]) * double(L.width(v)) + double(L.width(v)) * double(L.cols[c]) +
           double(L.rows[r]) * double(L.cols[c]);
  };
  auto moved = [&](int t, int step, int r) {
    for (const KMove& m : earlier)
      if (m.victim == t && m.step == step && m.row == r) return true;
    return false;
  };
  double known = 0;  // when the plan is known: the last report
  for (const KReport& x : reports) known = std::max(known, x.elapsed);
  std::vector<RateRank> ranks(static_cast<std::size_t>(P));
  std::vector<std::vector<std::pair<int, int>>> movable(static_cast<std::size_t>(P));  // (step, row)
  for (int t = 0; t < P; ++t) {
    const KReport& x = reports[static_cast<std::size_t>(t)];
    RateRank& k = ranks[static_cast<std::size_t>(t)];
    k.sec_per_work = x.sec_per_flop, k.may_take = L.width(t) > 0;
    k.ready = std::max(x.elapsed + x.flops_before * x.sec_per_flop, known);
    for (int step = cp.first; step < pc; ++step)
      for (int r = 0; r < pr; ++r)
        if (!moved(t, step, r)) k.work += ksplit_piece_flops(L, t, r, ksplit_col(L, t, step));
    for (const KMove& m : earlier)
      if (m.thief == t) {
        const int c = ksplit_col(L, m.victim, m.step);
        k.work += ksplit_piece_flops(L, m.victim, m.row, c), k.words += words_of(m.victim, m.row, c);
        ++k.taken;
      }
    if (may_give && !(*may_give)[static_cast<std::size_t>(t)]) continue;
    for (int step = pc - 1; step >= cp.first; --step) {
      const int c = ksplit_col(L, t, step);
      for (int i = pr - 1; i >= 0; --i) {
        const int r = (t / pc + i) % pr;
        const double f = ksplit_piece_flops(L, t, r, c);
        if (f > 0 && L.rank(r, c) != t && !moved(t, step, r)) {
          movable[t].push_back({step, r});
          k.items.push_back({f, words_of(t, r, c), L.rank(r, c)});
        }
      }
    }
  }
  std::vector<KMove> moves;
  for (const RateMove& m : rate_balance(ranks, {sec_per_word, max_per_thief, 0.1}, predicted)) {
    const auto [step, r] = movable[static_cast<std::size_t>(m.victim)][m.item];
    moves.push_back({m.victim, step, r, m.thief});
  }
  return moves;
}

// What rank `me` sends of B at each step: (fetching rank, run), the runs of its process row.
inline std::vector<std::vector<std::pair<int, const KRun*>>> ksplit_b_sends(const KSplitLayout& L,
                                                                            int me) {
  const int my_r = me / L.npcol, my_c = me % L.npcol;
  std::vector<std::vector<std::pair<int, const KRun*>>> out(static_cast<std::size_t>(L.npcol));
  for (int t = 0; t < L.nprow * L.npcol; ++t)
    for (const KRun& s : L.parts[static_cast<std::size_t>(t)])
      if (s.qb == my_r && s.width * L.cols[my_c] > 0)
        out[static_cast<std::size_t>(ksplit_step(t, my_c, L.npcol))].push_back({t, &s});
  return out;
}
// Elements of B's largest step of sends (one of its two packing slots).
inline index_t ksplit_b_slot(const KSplitLayout& L, int me,
                             const std::vector<std::vector<std::pair<int, const KRun*>>>& sends) {
  index_t most = 0;
  for (const auto& v : sends) {
    index_t n = 0;
    for (const auto& [t, s] : v) n += s->width * L.cols[me % L.npcol];
    most = std::max(most, n);
  }
  return most;
}

// Bytes rank `me` allocates: A's rows of its part (and its own rows packed for the others when
// not in place), two blocks of B in, two packing slots of B out, two steps' pieces of C, the
// receive slots for the others' pieces.
// At most this many pieces taken per rank, and the thieves' price of a word moved (about
// 4 GB/s of doubles, shared memory under load: an estimate, only to keep tiny gains from moving).
constexpr int kKSplitMaxStolen = 4;
constexpr double kKSplitSecPerWord = 2e-9;

inline double ksplit_bytes(const KSplitLayout& L, int me, std::size_t elem) {
  const int my_r = me / L.npcol, my_c = me % L.npcol;
  const double kr = double(L.width(me));
  double m = 0, nmax = 0, sent_a = 0;
  for (index_t r : L.rows) m += double(r);
  for (index_t c : L.cols) nmax = std::max(nmax, double(c));
  for (int t = 0; t < L.nprow * L.npcol; ++t)
    if (t / L.npcol != my_r && t % L.npcol == my_c)
      sent_a += double(L.width(t)) * double(L.rows[my_r]);
  const double own = double(L.rows[my_r]) * double(L.cols[my_c]);
  const double b_out = 2 * double(ksplit_b_slot(L, me, ksplit_b_sends(L, me)));
  // Balancing: up to kKSplitMaxStolen pieces taken (their A rows, B block and product), and
  // the operands this rank sends for others' moved pieces, packed (at most its A rows and B
  // columns of one part per move; bounded here by the thieves' total).
  double stolen = 0;
  if (L.npcol >= 3) {
    double rmax = 0, kmax = 0;
    for (index_t r : L.rows) rmax = std::max(rmax, double(r));
    for (int t = 0; t < L.nprow * L.npcol; ++t) kmax = std::max(kmax, double(L.width(t)));
    stolen = kKSplitMaxStolen * (rmax * kmax + kmax * nmax + rmax * nmax) +
             kKSplitMaxStolen * kmax * (double(L.rows[my_r]) + nmax);
  }
  return double(elem) *
         (m * kr + sent_a + 2 * kr * nmax + b_out + 2 * m * nmax + double(L.nprow + 1) * own + stolen);
}

// dst (ld_dst) = the rows x cols block of src (ld_src), column by column: every packing and
// local copy of the k-split's operands.
template <class T>
void copy_columns(T* dst, index_t ld_dst, const T* src, index_t ld_src, index_t rows, index_t cols) {
  if (rows <= 0) return;
  for (index_t j = 0; j < cols; ++j)
    std::memcpy(dst + j * ld_dst, src + j * ld_src, sizeof(T) * static_cast<std::size_t>(rows));
}

struct KSplitTimes {
  double pack = 0, wait = 0, multiply = 0, combine = 0;
  int moved = 0;  // pieces the balancer moved (the same on every rank)
};

// The balancer's switches: off, or one rank's reported time scaled (a test makes it look slow
// so that pieces move on an idle machine; the products are real either way).
struct KSplitBalance {
  bool enabled = true;
  Skew skew;
  bool trace = false;  // one line per rank on stderr: rates, predicted and actual finish
};

// The pieces of C that other ranks send this rank, summed into its block as they arrive: a few
// receive slots, posted in the order the senders compute the pieces (so fresh memory stays at
// a few pieces, not P of them). The sources from `hold` on are not posted until release():
// the balancer may still give their pieces to other ranks (replace).
template <class T>
class PieceSummer {
 public:
  PieceSummer(const Comm& comm, std::vector<int> sources, index_t rows, index_t cols, T* C,
              index_t ldc, int slots, int tag, std::size_t hold = SIZE_MAX)
      : comm_(comm), src_(std::move(sources)), rows_(rows), cols_(cols), C_(C), ldc_(ldc),
        tag_(tag), hold_(hold) {
    const std::size_t piece = static_cast<std::size_t>(rows * cols);
    slots = std::max(1, std::min<int>(slots, static_cast<int>(src_.size())));
    if (piece == 0) src_.clear();
    buf_ = aligned_alloc_array<T>(src_.empty() ? 0 : piece * static_cast<std::size_t>(slots));
    req_.assign(static_cast<std::size_t>(slots), MPI_REQUEST_NULL);
    for (int s = 0; s < slots; ++s) post(s);
  }
  ~PieceSummer() { finish(); }
  PieceSummer(const PieceSummer&) = delete;
  PieceSummer& operator=(const PieceSummer&) = delete;
  void poke() { drain(false); }
  void finish() {
    release();
    drain(true);
  }
  // The held piece from `from` comes from `to` instead.
  void replace(int from, int to) {
    for (std::size_t i = std::max(hold_, next_); i < src_.size(); ++i)
      if (src_[i] == from) {
        src_[i] = to;
        return;
      }
  }
  void release() {
    if (hold_ == SIZE_MAX) return;
    hold_ = SIZE_MAX;
    for (std::size_t s = 0; s < req_.size(); ++s)
      if (req_[s] == MPI_REQUEST_NULL) post(static_cast<int>(s));
  }

 private:
  void post(int slot) {
    if (next_ >= src_.size() || next_ >= hold_) return;
    MPI_Irecv(buf_.get() + static_cast<std::size_t>(slot) * rows_ * cols_,
              mpi_count(rows_ * cols_), mpi_type<T>(), src_[next_++], tag_, comm_.get(),
              &req_[static_cast<std::size_t>(slot)]);
  }
  void drain(bool block) {
    std::vector<int> done(req_.size());
    while (true) {
      int n = 0;
      if (block) MPI_Waitsome(int(req_.size()), req_.data(), &n, done.data(), MPI_STATUSES_IGNORE);
      else MPI_Testsome(int(req_.size()), req_.data(), &n, done.data(), MPI_STATUSES_IGNORE);
      if (n == MPI_UNDEFINED || n == 0) return;  // nothing pending / nothing arrived
      for (int i = 0; i < n; ++i) {
        const T* p = buf_.get() + static_cast<std::size_t>(done[i]) * rows_ * cols_;
        for (index_t j = 0; j < cols_; ++j)
          for (index_t r = 0; r < rows_; ++r) C_[r + j * ldc_] += p[r + j * rows_];
        post(done[i]);
      }
      if (!block) return;
    }
  }
  const Comm& comm_;
  std::vector<int> src_;
  std::size_t next_ = 0;
  index_t rows_, cols_;
  T* C_;
  index_t ldc_;
  int tag_;
  std::size_t hold_;
  AlignedPtr<T> buf_;
  std::vector<MPI_Request> req_;
};

// C(my rows, my columns) = alpha A B + beta C on the block-cyclic layout, with L's split of k.
// A (lda) starts at this rank's first row of sub(A) (local columns as the runs say), B (ldb)
// at its first column of sub(B) (local rows as the runs say), C (ldc) at its block of sub(C).
// Collective over `comm` (ranks in row-major grid order). Buffers are left uninitialised (every
// element is written before it is read) and used per step where they can be: on a node, fresh
// memory (page faults, the kernel's zeroing) costs several times a warm copy, and the copies
// compete with the products for memory bandwidth. Everything is allocated before the first
// message is posted, so a rank that cannot allocate leaves nothing in flight (the caller aborts
// the job); a failure once messages are in flight aborts the job here, since the other ranks
// would wait for this one's messages.
template <class T>
void block_cyclic_ksplit(Engine& e, T alpha, const T* A, index_t lda, const T* B, index_t ldb,
                         T beta, T* C, index_t ldc, const KSplitLayout& L, const Comm& comm,
                         KSplitTimes& times, const KSplitBalance& balance = {}) {
  using clock = std::chrono::steady_clock;
  auto since = [](clock::time_point t) {
    return std::chrono::duration<double>(clock::now() - t).count();
  };
  const auto t0 = clock::now();
  const int pr = L.nprow, pc = L.npcol, my_r = L.myrow, my_c = L.mycol;
  const int P = pr * pc, me = L.rank(my_r, my_c);
  const index_t mloc = L.rows[my_r], nloc = L.cols[my_c];
  const auto& mine = L.parts[static_cast<std::size_t>(me)];
  const index_t kr = L.width(me);
  constexpr int kTagA = 4101, kTagB = 4102, kTagC = 4103, kTagMovedA = 4104, kTagMovedB = 4105;
  const bool balancing = balance.enabled && pc >= 3;
  auto sz = [](index_t n) { return static_cast<std::size_t>(std::max<index_t>(n, 0)); };
  index_t b_cols = 0, m_all = 0, r_max = 0;
  for (index_t c : L.cols) b_cols = std::max(b_cols, c);
  for (index_t r : L.rows) m_all += r, r_max = std::max(r_max, r);

  // ---- the plan of this rank's messages, and every buffer, before anything is posted ----
  // The other ranks' pieces of C for me, in the order they compute them (step, then row).
  std::vector<int> senders;
  for (int s = 0; s < P; ++s)
    if (s != me && L.width(s) > 0) senders.push_back(s);
  std::stable_sort(senders.begin(), senders.end(), [&](int x, int y) {
    auto key = [&](int s) {
      return ksplit_step(s, my_c, pc) * pr + ((my_r - s / pc) % pr + pr) % pr;
    };
    return key(x) < key(y);
  });
  // A: my rows of my column-mates' parts (in place when my rows are whole local columns).
  const bool a_contiguous = lda == mloc;
  index_t a_need = 0, msg_max = kr * b_cols;  // the largest message, for MPI's int counts
  for (int r = 0; r < pr; ++r)
    if (r != my_r)
      for (const KRun& s : L.parts[static_cast<std::size_t>(L.rank(r, my_c))])
        a_need += s.width * mloc, msg_max = std::max(msg_max, s.width * r_max);
  const auto b_out = ksplit_b_sends(L, me);
  const index_t b_slot = ksplit_b_slot(L, me, b_out);
  msg_max = std::max({msg_max, b_slot, r_max * b_cols});
  (void)mpi_count(msg_max);  // too large: a UsageError now, before anything is in flight
  AlignedPtr<T> a_pack = aligned_alloc_array<T>(a_contiguous ? 0 : sz(a_need));
  std::vector<const T*> a_ptr(static_cast<std::size_t>(pr), nullptr);
  std::vector<index_t> a_ld(static_cast<std::size_t>(pr), 1);
  std::vector<AlignedPtr<T>> a_buf(static_cast<std::size_t>(pr));
  for (int r = 0; r < pr && kr > 0; ++r) {
    const index_t rows = L.rows[r];
    a_ld[r] = std::max<index_t>(1, rows);
    if (rows == 0) continue;
    if (r == my_r && mine.size() == 1) {
      a_ptr[r] = A + mine[0].a0 * lda, a_ld[r] = lda;
      continue;
    }
    a_buf[r] = aligned_alloc_array<T>(sz(rows * kr));
    a_ptr[r] = a_buf[r].get();
  }
  AlignedPtr<T> b_pack[2], b_buf[2], c_buf[2];
  for (int slot = 0; slot < 2 && slot < pc; ++slot) {
    b_pack[slot] = aligned_alloc_array<T>(sz(b_slot));
    if (kr > 0) {
      b_buf[slot] = aligned_alloc_array<T>(sz(kr * b_cols));
      c_buf[slot] = aligned_alloc_array<T>(sz(m_all * b_cols));
    }
  }
  // The others' pieces, summed into my block as they arrive (its receive slots allocated
  // before it posts).
  for (index_t j = 0; j < nloc; ++j) {  // my block starts as beta C (beta = 0: C is not read)
    T* cj = C + j * ldc;
    if (beta == T(0)) std::fill(cj, cj + mloc, T(0));
    else if (beta != T(1))
      for (index_t i = 0; i < mloc; ++i) cj[i] *= beta;
  }
  // Balancing: the pieces of the steps that may move wait for the last plan (they may come
  // from other ranks).
  const std::vector<KCheckpoint> cps = balancing ? ksplit_checkpoints(pc) : std::vector<KCheckpoint>{};
  const std::size_t ncp = cps.size();
  std::size_t hold = SIZE_MAX;
  if (ncp > 0)
    for (std::size_t i = 0; i < senders.size() && hold == SIZE_MAX; ++i)
      if (ksplit_step(senders[i], my_c, pc) >= cps[0].first) hold = i;
  PieceSummer<T> summer(comm, senders, mloc, nloc, C, ldc, pr + 1, kTagC, hold);

  // Every transfer in flight, poked during the products and while waiting: a rank blocked in
  // a plain MPI wait would not repost its receive slots, and two such ranks could wait on each
  // other's pieces.
  Requests a_sends, b_sends[2], b_recvs[2], c_sends[2];
  std::vector<Requests> a_recvs(static_cast<std::size_t>(pr));

  // ---- the balancer's state: the rates exchanged after the first step, the plan, the moved
  // pieces' transfers ----
  struct Moved {  // a piece this rank computes for another
    int owner;
    index_t rows, cols, width;
    AlignedPtr<T> a, b, c;
    Requests in;
  };
  // Per checkpoint: the reports' exchange (KReport's three numbers per rank), whether its plan
  // is applied; the ranks that may give pieces at the second.
  std::vector<RateGather> rates(ncp, RateGather(P, 3));
  std::vector<char> planned(ncp, 0), late;
  std::vector<KMove> all_moves;
  std::vector<double> predicted(ncp, 0);  // my finish as each plan predicted it (trace)
  std::vector<std::pair<int, int>> given;  // (step, row) of my pieces that others compute
  std::vector<std::unique_ptr<Moved>> taken;
  std::vector<AlignedPtr<T>> moved_out;  // packed operands sent for moved pieces
  Requests moved_sends, moved_products;
  auto apply_plan = [&](std::size_t j) {
    std::vector<KReport> reports(static_cast<std::size_t>(P));
    std::vector<double> spf(static_cast<std::size_t>(P)), pred;
    const std::vector<double>& x = rates[j].all;
    for (int t = 0; t < P; ++t) reports[t] = {x[3 * t], x[3 * t + 1], x[3 * t + 2]}, spf[t] = x[3 * t];
    const std::vector<KMove> moves = ksplit_plan(L, cps[j], reports, all_moves, kKSplitSecPerWord,
                                                 kKSplitMaxStolen, j == 0 ? nullptr : &late, &pred);
    if (j == 0) late = rate_late(pred, spf);
    predicted[j] = pred[static_cast<std::size_t>(me)];
    all_moves.insert(all_moves.end(), moves.begin(), moves.end());
    times.moved = static_cast<int>(all_moves.size());
    for (const KMove& mv : moves) {  // every rank walks the moves in the same order
      const int v = mv.victim, u = mv.thief, r = mv.row;
      const int c = ksplit_col(L, v, mv.step), a_owner = L.rank(r, v % pc);
      const auto& vparts = L.parts[static_cast<std::size_t>(v)];
      const index_t kv = L.width(v), rows = L.rows[r], cols = L.cols[c];
      if (me == a_owner && me != u)  // my rows of A for v's part
        for (const KRun& s : vparts) {
          const T* src = A + s.a0 * lda;
          if (lda != mloc) {
            moved_out.push_back(aligned_alloc_array<T>(sz(s.width * mloc)));
            copy_columns(moved_out.back().get(), mloc, src, lda, mloc, s.width);
            src = moved_out.back().get();
          }
          comm.isend(src, s.width * mloc, u, kTagMovedA, moved_sends);
        }
      if (my_c == c && me != u)  // my rows of B's block c for v's part
        for (const KRun& s : vparts) {
          if (s.qb != my_r) continue;
          moved_out.push_back(aligned_alloc_array<T>(sz(s.width * nloc)));
          T* dst = moved_out.back().get();
          copy_columns(dst, s.width, B + s.b0, ldb, s.width, nloc);
          comm.isend(dst, s.width * nloc, u, kTagMovedB, moved_sends);
        }
      if (me == v) given.push_back({mv.step, r});
      if (me == L.rank(r, c)) summer.replace(v, u);
      if (me != u) continue;
      auto m = std::make_unique<Moved>();
      m->owner = L.rank(r, c), m->rows = rows, m->cols = cols, m->width = kv;
      m->a = aligned_alloc_array<T>(sz(rows * kv));
      m->b = aligned_alloc_array<T>(sz(kv * cols));
      m->c = aligned_alloc_array<T>(sz(rows * cols));
      index_t off = 0;
      for (const KRun& s : vparts) {
        if (a_owner == me) {
          copy_columns(m->a.get() + off * rows, rows, A + s.a0 * lda, lda, rows, s.width);
        } else {
          comm.irecv(m->a.get() + off * rows, s.width * rows, a_owner, kTagMovedA, m->in);
        }
        const int b_owner = L.rank(s.qb, c);
        if (b_owner == me) {
          copy_columns(m->b.get() + off, kv, B + s.b0, ldb, s.width, cols);
        } else if (vparts.size() == 1) {
          comm.irecv(m->b.get(), kv * cols, b_owner, kTagMovedB, m->in);
        } else {
          comm.irecv_strided(m->b.get() + off, cols, s.width, kv, b_owner, kTagMovedB, m->in);
        }
        off += s.width;
      }
      taken.push_back(std::move(m));
    }
    planned[j] = 1;
    if (j + 1 == ncp) summer.release();
  };
  auto check_plan = [&] {  // the plans in order: each builds on the earlier moves
    for (std::size_t j = 0; j < ncp; ++j) {
      if (planned[j]) continue;
      if (!rates[j].ready()) return;
      apply_plan(j);
    }
  };

  struct Poke {
    std::vector<Requests*> sets;
    PieceSummer<T>* summer;
    std::function<void()> plan;
    void poke() {
      for (Requests* s : sets) s->poke();
      summer->poke();
      plan();
    }
  } poke{{&b_recvs[0], &b_recvs[1], &b_sends[0], &b_sends[1], &c_sends[0], &c_sends[1],
          &a_sends, &moved_sends, &moved_products}, &summer, check_plan};
  double wait = 0;
  auto timed_wait = [&](Requests& r) {
    const auto w0 = clock::now();
    while (!r.test_all()) poke.poke();
    wait += since(w0);
  };

  try {
    // ---- A out to the column-mates (the next rows first: they multiply with them first),
    // and in: the column-mates' rows of my part ----
    index_t at = 0;
    for (int i = 1; i < pr; ++i) {
      const int r = (my_r + pr - i) % pr;
      for (const KRun& s : L.parts[static_cast<std::size_t>(L.rank(r, my_c))]) {
        if (s.width * mloc == 0) continue;
        const T* src = A + s.a0 * lda;
        if (!a_contiguous) {
          T* dst = a_pack.get() + at;
          copy_columns(dst, mloc, src, lda, mloc, s.width);
          src = dst, at += s.width * mloc;
        }
        comm.isend(src, s.width * mloc, L.rank(r, my_c), kTagA, a_sends);
      }
    }
    for (int i = 0; i < pr && kr > 0; ++i) {
      const int r = (my_r + i) % pr;
      const index_t rows = L.rows[r];
      if (rows == 0 || !a_buf[r]) continue;
      index_t off = 0;
      for (const KRun& s : mine) {
        T* dst = a_buf[r].get() + off * rows;
        if (r == my_r) {
          copy_columns(dst, rows, A + s.a0 * lda, lda, rows, s.width);
        } else {
          comm.irecv(dst, s.width * rows, L.rank(r, my_c), kTagA, a_recvs[r]);
        }
        off += s.width;
      }
    }

    // ---- B out: my columns of the runs on my process row, packed per step of the ranks that
    // fetch them, into two slots ----
    auto send_b = [&](int step) {
      const int slot = step % 2;
      timed_wait(b_sends[slot]);  // step - 2's sends: fetched by now
      index_t at = 0;
      for (const auto& [t, s] : b_out[static_cast<std::size_t>(step)]) {
        T* dst = b_pack[slot].get() + at;
        copy_columns(dst, s->width, B + s->b0, ldb, s->width, nloc);
        comm.isend(dst, s->width * nloc, t, kTagB, b_sends[slot]);
        at += s->width * nloc;
      }
    };
    send_b(0);
    if (pc > 1) send_b(1);
    times.pack = since(t0);

    // ---- B's column blocks in, double-buffered; each block's pieces of C out (two steps'
    // worth of buffer) while the next is multiplied ----
    auto post_b = [&](int step, int slot) {
      const int c = (my_c + my_r + step) % pc;
      const index_t w = L.cols[c];
      if (kr == 0 || w == 0) return;
      index_t off = 0;
      for (const KRun& s : mine) {
        if (mine.size() == 1)
          comm.irecv(b_buf[slot].get(), kr * w, L.rank(s.qb, c), kTagB, b_recvs[slot]);
        else  // several runs: each into its rows of the kr x w block
          comm.irecv_strided(b_buf[slot].get() + off, w, s.width, kr, L.rank(s.qb, c), kTagB,
                             b_recvs[slot]);
        off += s.width;
      }
    };
    const auto t1 = clock::now();
    double product_s = 0, product_flops = 0;  // the balancer's measure: my products so far
    // My flops from piece i of step `from` up to step `first` (not counting pieces given away).
    auto flops_before = [&](int from, int i0, int first) {
      double f = 0;
      for (int st = from; st < first && kr > 0; ++st)
        for (int i = st == from ? i0 : 0; i < pr; ++i) {
          const int r = (my_r + i) % pr, c = ksplit_col(L, me, st);
          if (std::find(given.begin(), given.end(), std::pair{st, r}) == given.end())
            f += ksplit_piece_flops(L, me, r, c);
        }
      return f;
    };
    auto report = [&](std::size_t j, int step, int i) {  // every rank, once per checkpoint
      if (j >= ncp || rates[j].posted()) return;
      const double spf = product_flops > 0 ? skewed(balance.skew, me, product_s / product_flops) : 0;
      rates[j].post(comm, {spf, since(t1), flops_before(step, i, cps[j].first)});
    };
    auto wait_plan = [&](std::size_t j) {
      const auto w0 = clock::now();
      while (!planned[j]) poke.poke();
      wait += since(w0);
    };
    if (kr > 0) post_b(0, 0);
    for (int step = 0; step < pc; ++step) {
      const int slot = step % 2, c = (my_c + my_r + step) % pc;
      if (step >= 1 && step + 1 < pc) send_b(step + 1);
      if (ncp > 0) {
        if (step == 1) report(0, 1, 0);  // if not made halfway through step 0
        if (ncp > 1 && step == ksplit_second_report(pc) + 1) report(1, step, 0);
        // Pieces from here on may move: the plan first (the second plan: only for the ranks
        // the first left late, the others' pieces stay).
        if (step == cps[0].first) wait_plan(0);
        if (ncp > 1 && step == cps[1].first && late[static_cast<std::size_t>(me)]) wait_plan(1);
      }
      if (kr == 0) continue;
      timed_wait(b_recvs[slot]);
      if (step + 1 < pc) post_b(step + 1, 1 - slot);
      timed_wait(c_sends[slot]);  // step - 2's pieces: fetched by now
      index_t at = 0;
      for (int i = 0; i < pr; ++i) {
        const int r = (my_r + i) % pr, t = L.rank(r, c);
        if (step == 0 && i == (pr + 1) / 2) report(0, 0, i);  // halfway through step 0
        if (L.rows[r] == 0 || L.cols[c] == 0) continue;
        if (std::find(given.begin(), given.end(), std::pair{step, r}) != given.end())
          continue;  // another rank computes this piece
        timed_wait(a_recvs[r]);
        const auto g0 = clock::now();
        if (t == me) {  // my own piece straight into my block
          gemm_with_progress<T>(e, mloc, nloc, kr, alpha, a_ptr[r], a_ld[r], b_buf[slot].get(),
                                kr, T(1), C, ldc, &poke);
          product_s += since(g0), product_flops += ksplit_piece_flops(L, me, r, c);
          continue;
        }
        T* piece = c_buf[slot].get() + at;
        gemm_with_progress<T>(e, L.rows[r], L.cols[c], kr, alpha, a_ptr[r], a_ld[r],
                              b_buf[slot].get(), kr, T(0), piece, L.rows[r], &poke);
        product_s += since(g0), product_flops += ksplit_piece_flops(L, me, r, c);
        comm.isend(piece, L.rows[r] * L.cols[c], t, kTagC, c_sends[slot]);
        at += L.rows[r] * L.cols[c];
      }
    }
    // ---- the pieces taken from slower ranks, as their operands arrive (every plan known) ----
    for (std::size_t j = 0; j < ncp; ++j) wait_plan(j);
    for (auto& m : taken) {
      timed_wait(m->in);
      gemm_with_progress<T>(e, m->rows, m->cols, m->width, alpha, m->a.get(), m->rows, m->b.get(),
                            m->width, T(0), m->c.get(), m->rows, &poke);
      comm.isend(m->c.get(), m->rows * m->cols, m->owner, kTagC, moved_products);
    }
    times.multiply = since(t1);
    if (balance.trace) {
      std::string line = "distmm: k-split rank " + std::to_string(me) + ": products " +
                         std::to_string(product_s) + " s at " +
                         std::to_string(product_flops / std::max(product_s, 1e-9) / 1e9) +
                         " GFLOP/s, gave " + std::to_string(given.size()) + ", took " +
                         std::to_string(taken.size()) + ", waited " + std::to_string(wait) +
                         " s, done at " + std::to_string(times.multiply) + " s; predicted";
      for (std::size_t j = 0; j < ncp; ++j)
        line += " " + std::to_string(predicted[j]) + " (rate " + std::to_string(rates[j].mine[0] * 1e12) + " ps/flop)";
      std::fprintf(stderr, "%s\n", line.c_str());
    }

    // ---- the last pieces in; every send done ----
    const auto t2 = clock::now();
    summer.finish();
    for (int s = 0; s < 2; ++s) timed_wait(c_sends[s]), timed_wait(b_sends[s]);
    timed_wait(a_sends), timed_wait(moved_sends), timed_wait(moved_products);
    times.combine = since(t2);
    times.wait = wait;
  } catch (const std::exception& x) {
    std::fprintf(stderr, "distmm: the k-split failed on rank %d with messages in flight: %s\n",
                 comm.rank(), x.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

}  // namespace distmm
