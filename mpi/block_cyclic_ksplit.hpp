// The k-split schedule on ScaLAPACK's block-cyclic layout itself (libdistmm_scalapack's answer
// to k-dominant N x N calls whose operands line up; see pxgemm.cpp).
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
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <vector>

#include "../node/engine.hpp"
#include "../src/core/matrix.hpp"
#include "comm.hpp"
#include "overlap.hpp"

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
  return double(elem) *
         (m * kr + sent_a + 2 * kr * nmax + b_out + 2 * m * nmax + double(L.nprow + 1) * own);
}

struct KSplitTimes {
  double pack = 0, wait = 0, multiply = 0, combine = 0;
};

// The pieces of C that other ranks send this rank, summed into its block as they arrive: a few
// receive slots, posted in the order the senders compute the pieces (so fresh memory stays at
// a few pieces, not P of them).
template <class T>
class PieceSummer {
 public:
  PieceSummer(const Comm& comm, std::vector<int> sources, index_t rows, index_t cols, T* C,
              index_t ldc, int slots, int tag)
      : comm_(comm), src_(std::move(sources)), rows_(rows), cols_(cols), C_(C), ldc_(ldc),
        tag_(tag) {
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
  void finish() { drain(true); }

 private:
  void post(int slot) {
    if (next_ >= src_.size()) return;
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
                         KSplitTimes& times) {
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
  constexpr int kTagA = 4101, kTagB = 4102, kTagC = 4103;
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
  PieceSummer<T> summer(comm, senders, mloc, nloc, C, ldc, pr + 1, kTagC);

  // Every transfer in flight, poked during the products and while waiting: a rank blocked in
  // a plain MPI wait would not repost its receive slots, and two such ranks could wait on each
  // other's pieces.
  Requests a_sends, b_sends[2], b_recvs[2], c_sends[2];
  std::vector<Requests> a_recvs(static_cast<std::size_t>(pr));
  struct Poke {
    std::vector<Requests*> sets;
    PieceSummer<T>* summer;
    void poke() {
      for (Requests* s : sets) s->poke();
      summer->poke();
    }
  } poke{{&b_recvs[0], &b_recvs[1], &b_sends[0], &b_sends[1], &c_sends[0], &c_sends[1],
          &a_sends}, &summer};
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
          for (index_t j = 0; j < s.width; ++j)
            std::memcpy(dst + j * mloc, src + j * lda, sizeof(T) * sz(mloc));
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
          for (index_t j = 0; j < s.width; ++j)
            std::memcpy(dst + j * rows, A + (s.a0 + j) * lda, sizeof(T) * sz(rows));
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
        for (index_t j = 0; j < nloc; ++j)
          std::memcpy(dst + j * s->width, B + s->b0 + j * ldb, sizeof(T) * sz(s->width));
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
    if (kr > 0) post_b(0, 0);
    for (int step = 0; step < pc; ++step) {
      const int slot = step % 2, c = (my_c + my_r + step) % pc;
      if (step >= 1 && step + 1 < pc) send_b(step + 1);
      if (kr == 0) continue;
      timed_wait(b_recvs[slot]);
      if (step + 1 < pc) post_b(step + 1, 1 - slot);
      timed_wait(c_sends[slot]);  // step - 2's pieces: fetched by now
      index_t at = 0;
      for (int i = 0; i < pr; ++i) {
        const int r = (my_r + i) % pr, t = L.rank(r, c);
        if (L.rows[r] == 0 || L.cols[c] == 0) continue;
        timed_wait(a_recvs[r]);
        if (t == me) {  // my own piece straight into my block
          gemm_with_progress<T>(e, mloc, nloc, kr, alpha, a_ptr[r], a_ld[r], b_buf[slot].get(),
                                kr, T(1), C, ldc, &poke);
          continue;
        }
        T* piece = c_buf[slot].get() + at;
        gemm_with_progress<T>(e, L.rows[r], L.cols[c], kr, alpha, a_ptr[r], a_ld[r],
                              b_buf[slot].get(), kr, T(0), piece, L.rows[r], &poke);
        comm.isend(piece, L.rows[r] * L.cols[c], t, kTagC, c_sends[slot]);
        at += L.rows[r] * L.cols[c];
      }
    }
    times.multiply = since(t1);

    // ---- the last pieces in; every send done ----
    const auto t2 = clock::now();
    summer.finish();
    for (int s = 0; s < 2; ++s) timed_wait(c_sends[s]), timed_wait(b_sends[s]);
    timed_wait(a_sends);
    times.combine = since(t2);
    times.wait = wait;
  } catch (const std::exception& x) {
    std::fprintf(stderr, "distmm: the k-split failed on rank %d with messages in flight: %s\n",
                 comm.rank(), x.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

}  // namespace distmm
