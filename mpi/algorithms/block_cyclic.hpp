// ScaLAPACK's block-cyclic distributions as the drop-in (mpi/scalapack/pxgemm.cpp) reads them:
// PBLAS's descriptors, one dimension's owners and local indices, the gathers and scatters
// between a block-cyclic sub(X) and an algorithm's layout, and SUMMA on the block-cyclic layout
// itself (run by the drop-in and by MultiplyPlan, through block_cyclic_direct.hpp).
#pragma once
#include <algorithm>
#include <chrono>
#include <climits>
#include <complex>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "../../node/engine.hpp"
#include "../../src/core/matrix.hpp"
#include "../runtime/comm.hpp"
#include "../runtime/device_space.hpp"
#include "../runtime/partition.hpp"
#include "../runtime/pipeline.hpp"

namespace distmm::block_cyclic {

// PBLAS's internal descriptor (PBtools.h): the 9-entry BLOCK_CYCLIC_2D one is widened.
enum { DTYPE_ = 0, CTXT_, M_, N_, IMB_, INB_, MB_, NB_, RSRC_, CSRC_, LLD_, DLEN_ };
constexpr int kBlockCyclic = 1, kBlockCyclicInb = 2, kDescMult = 100, kBigNum = 10000;

inline void desc_ftoc(const int* in, int* out) {  // PB_CargFtoC
  if (in[0] == kBlockCyclic) {
    out[DTYPE_] = kBlockCyclicInb;
    out[CTXT_] = in[1], out[M_] = in[2], out[N_] = in[3];
    out[IMB_] = out[MB_] = in[4];
    out[INB_] = out[NB_] = in[5];
    out[RSRC_] = in[6], out[CSRC_] = in[7], out[LLD_] = in[8];
  } else if (in[0] == kBlockCyclicInb) {
    for (int i = 0; i < DLEN_; ++i) out[i] = in[i];
  } else {
    out[DTYPE_] = in[0], out[CTXT_] = in[1];
    out[M_] = out[N_] = 0;
    out[IMB_] = out[INB_] = out[MB_] = out[NB_] = 1;
    out[RSRC_] = out[CSRC_] = 0, out[LLD_] = 1;
  }
}

// One dimension of a block-cyclic distribution: the first block imb, then mb, starting on
// process src of np (src = -1: replicated on every process).
struct CyclicDim {
  index_t imb = 1, mb = 1;
  int src = 0, np = 1;
  index_t block(index_t g) const { return g < imb ? 0 : 1 + (g - imb) / mb; }
  int owner(index_t g) const {  // -1: every process
    return src < 0 ? -1 : static_cast<int>((src + block(g)) % np);
  }
  index_t local(index_t g) const {  // index on its owner
    if (src < 0 || np == 1) return g;
    const index_t b = block(g);
    if (b == 0) return g;
    const index_t off = (g - imb) % mb, j = b / np;
    return (owner(g) == src ? imb + (j - 1) * mb : j * mb) + off;
  }
  index_t count(index_t n, int p) const {  // Mnumroc(n, 0, imb, mb, p, src, np)
    if (src < 0 || np == 1) return n;
    index_t c = 0;
    for (index_t g = 0, b = 0; g < n; ++b) {
      const index_t len = std::min(b == 0 ? imb : mb, n - g);
      if ((src + b) % np == p) c += len;
      g += len;
    }
    return c;
  }
};


template <class T>
T conj_if(T v, bool c) {
  if constexpr (std::is_floating_point_v<T>) return (void)c, v;
  else return c ? std::conj(v) : v;
}


// ---- one logical dimension of op(sub(X)) seen in X's block-cyclic distribution ----
struct LogicalDim {
  CyclicDim cyc;
  index_t off = 0;       // IA - 1 or JA - 1
  bool grid_rows = true;  // distributed over process rows (else columns)
  int coord(index_t x) const {  // owning process coordinate (replicated: 0 sends)
    const int o = cyc.owner(off + x);
    return o < 0 ? 0 : o;
  }
  bool replicated() const { return cyc.src < 0; }
  index_t local(index_t x) const { return cyc.local(off + x); }
};

// The block-cyclic local indices of the logical indices in `runs` (in their order) that the
// process at `coord` holds; `all` holds them all (replicated dimension, receiving side).
inline std::vector<index_t> select(const std::vector<Run>& runs, const LogicalDim& d, int coord, bool all) {
  std::vector<index_t> out;
  for (const Run& r : runs)
    for (index_t x = r.global; x < r.global + r.length; ++x)
      if (all || d.coord(x) == coord) out.push_back(d.local(x));
  return out;
}

// This rank's local indices (in `runs`' local order) held, block-cyclically, by each process
// coordinate 0..np-1 of the dimension.
inline std::vector<std::vector<index_t>> buckets(const std::vector<Run>& runs, const LogicalDim& d,
                                          int np, bool replicate) {
  std::vector<std::vector<index_t>> out(np);
  index_t l = 0;
  for (const Run& r : runs)
    for (index_t x = r.global; x < r.global + r.length; ++x, ++l) {
      if (replicate && d.replicated())
        for (auto& b : out) b.push_back(l);
      else
        out[d.coord(x)].push_back(l);
    }
  return out;
}

inline int to_count(std::size_t n) {
  if (n > static_cast<std::size_t>(INT_MAX))
    throw UsageError("a message above 2^31 elements: use more ranks");
  return static_cast<int>(n);
}

// A list of local indices as runs of consecutive ones (first, length): the block-cyclic blocks
// become memcpy-sized pieces instead of one indexed access per element.
inline std::vector<std::pair<index_t, index_t>> index_runs(const std::vector<index_t>& idx) {
  std::vector<std::pair<index_t, index_t>> runs;
  for (std::size_t i = 0; i < idx.size();) {
    std::size_t j = i + 1;
    while (j < idx.size() && idx[j] == idx[j - 1] + 1) ++j;
    runs.push_back({idx[i], index_t(j - i)});
    i = j;
  }
  return runs;
}

// out (rows.size() x cols.size(), contiguous) = X(rows, cols): local indices, ld = ld.
template <class T>
void gather_runs(T* out, const T* X, index_t ld, const std::vector<index_t>& rows,
                 const std::vector<index_t>& cols) {
  const auto runs = index_runs(rows);
  const index_t nr = index_t(rows.size());
#pragma omp parallel for schedule(static) if (std::size_t(nr) * cols.size() > (std::size_t(1) << 18))
  for (std::size_t ci = 0; ci < cols.size(); ++ci) {
    T* o = out + index_t(ci) * nr;
    for (const auto& [r0, len] : runs)
      std::memcpy(o, X + r0 + cols[ci] * ld, sizeof(T) * std::size_t(len)), o += len;
  }
}
// X(rows, cols) = in (contiguous, as gather_runs writes it), or beta X(rows, cols) + in when
// beta is given and not zero (beta zero: X is not read).
template <class T>
void scatter_runs(T* X, index_t ld, const T* in, const std::vector<index_t>& rows,
                  const std::vector<index_t>& cols, const T* beta = nullptr) {
  const auto runs = index_runs(rows);
  const index_t nr = index_t(rows.size());
  const bool assign = !beta || *beta == T(0);
#pragma omp parallel for schedule(static) if (std::size_t(nr) * cols.size() > (std::size_t(1) << 18))
  for (std::size_t ci = 0; ci < cols.size(); ++ci) {
    const T* i = in + index_t(ci) * nr;
    for (const auto& [r0, len] : runs) {
      T* x = X + r0 + cols[ci] * ld;
      if (assign) std::memcpy(x, i, sizeof(T) * std::size_t(len));
      else
        for (index_t t = 0; t < len; ++t) x[t] = *beta * x[t] + i[t];
      i += len;
    }
  }
}


struct Grid {
  int nprow, npcol, myrow, mycol;
  int coord(bool rows) const { return rows ? myrow : mycol; }
  int np(bool rows) const { return rows ? nprow : npcol; }
};

// Block-cyclic op(sub(X)) (rows x cols logical, dims dr, dc) into this rank's piece `mine`
// of the distmm layout (local, column-major, ld = mine.rows()).
template <class T>
std::vector<T> to_layout(const T* X, index_t lld, bool trans, bool conj, const LogicalDim& dr,
                         const LogicalDim& dc, const std::vector<Piece>& pieces, int me,
                         const Grid& g, const Comm& comm) {
  const int P = comm.size();
  std::vector<int> scount(P), sdispl(P), rcount(P), rdispl(P);
  // Send: my block-cyclic elements to each rank's piece, in its local column-major order.
  const bool i_send = (!dr.replicated() || g.coord(dr.grid_rows) == 0) &&
                      (!dc.replicated() || g.coord(dc.grid_rows) == 0);
  std::vector<std::vector<index_t>> srows(P), scols(P);
  std::size_t stotal = 0;
  for (int d = 0; d < P; ++d) {
    sdispl[d] = to_count(stotal);
    if (!i_send) continue;
    srows[d] = select(pieces[d].row_runs, dr, g.coord(dr.grid_rows), false);
    scols[d] = select(pieces[d].col_runs, dc, g.coord(dc.grid_rows), false);
    scount[d] = to_count(srows[d].size() * scols[d].size());
    stotal += std::size_t(scount[d]);
  }
  auto sbuf = aligned_alloc_array<T>(std::max<std::size_t>(stotal, 1));  // uninitialised: every element is written
  for (int d = 0; d < P; ++d) {
    if (!scount[d]) continue;
    T* out = sbuf.get() + sdispl[d];
    const auto& rows = srows[d];
    const auto& cols = scols[d];
    if (trans) {  // op(X) = X^T (or X^H): a logical row is a stored column
      for (index_t c : cols)
        for (index_t r : rows) *out++ = conj_if(X[c + r * lld], conj);
    } else {
      gather_runs(out, X, lld, rows, cols);
    }
  }
  // Receive: from each grid process, my piece's elements it holds.
  const Piece& mp = pieces[me];
  auto rb = buckets(mp.row_runs, dr, g.np(dr.grid_rows), false);
  auto cb = buckets(mp.col_runs, dc, g.np(dc.grid_rows), false);
  std::size_t rtotal = 0;
  for (int s = 0; s < P; ++s) {
    const int sr = s / g.npcol, sc = s % g.npcol;
    const auto& rows = rb[dr.grid_rows ? sr : sc];
    const auto& cols = cb[dc.grid_rows ? sr : sc];
    const bool sends = (!dr.replicated() || (dr.grid_rows ? sr : sc) == 0) &&
                       (!dc.replicated() || (dc.grid_rows ? sr : sc) == 0);
    rdispl[s] = to_count(rtotal);
    rcount[s] = sends ? to_count(rows.size() * cols.size()) : 0;
    rtotal += rcount[s];
  }
  auto rbuf = aligned_alloc_array<T>(std::max<std::size_t>(rtotal, 1));
  MPI_Alltoallv(sbuf.get(), scount.data(), sdispl.data(), mpi_type<T>(), rbuf.get(),
                rcount.data(), rdispl.data(), mpi_type<T>(), comm.get());
  sbuf.reset();
  const index_t ld = mp.rows();
  std::vector<T> local(static_cast<std::size_t>(ld * mp.cols()));
  for (int s = 0; s < P; ++s) {
    if (!rcount[s]) continue;
    const int sr = s / g.npcol, sc = s % g.npcol;
    const auto& rows = rb[dr.grid_rows ? sr : sc];
    const auto& cols = cb[dc.grid_rows ? sr : sc];
    scatter_runs(local.data(), ld, rbuf.get() + rdispl[s], rows, cols);
  }
  return local;
}

// The product C' in this rank's piece back to block-cyclic sub(C): C = beta C + C'.
template <class T>
void from_layout(const std::vector<T>& Cp, T beta, T* C, index_t lld, const LogicalDim& dr,
                 const LogicalDim& dc, const std::vector<Piece>& pieces, int me, const Grid& g,
                 const Comm& comm) {
  const int P = comm.size();
  std::vector<int> scount(P), sdispl(P), rcount(P), rdispl(P);
  const Piece& mp = pieces[me];
  const index_t ld = mp.rows();
  auto rb = buckets(mp.row_runs, dr, g.np(dr.grid_rows), true);
  auto cb = buckets(mp.col_runs, dc, g.np(dc.grid_rows), true);
  std::size_t stotal = 0;
  for (int s = 0; s < P; ++s) {
    const int sr = s / g.npcol, sc = s % g.npcol;
    sdispl[s] = to_count(stotal);
    scount[s] = to_count(rb[dr.grid_rows ? sr : sc].size() * cb[dc.grid_rows ? sr : sc].size());
    stotal += std::size_t(scount[s]);
  }
  auto sbuf = aligned_alloc_array<T>(std::max<std::size_t>(stotal, 1));  // uninitialised: every element is written
  for (int s = 0; s < P; ++s) {
    if (!scount[s]) continue;
    const int sr = s / g.npcol, sc = s % g.npcol;
    const auto& rows = rb[dr.grid_rows ? sr : sc];
    const auto& cols = cb[dc.grid_rows ? sr : sc];
    gather_runs(sbuf.get() + sdispl[s], Cp.data(), ld, rows, cols);
  }
  std::vector<std::vector<index_t>> rows_of(P), cols_of(P);
  std::size_t rtotal = 0;
  for (int d = 0; d < P; ++d) {
    rows_of[d] = select(pieces[d].row_runs, dr, g.coord(dr.grid_rows), dr.replicated());
    cols_of[d] = select(pieces[d].col_runs, dc, g.coord(dc.grid_rows), dc.replicated());
    rdispl[d] = to_count(rtotal);
    rcount[d] = to_count(rows_of[d].size() * cols_of[d].size());
    rtotal += rcount[d];
  }
  auto rbuf = aligned_alloc_array<T>(std::max<std::size_t>(rtotal, 1));
  MPI_Alltoallv(sbuf.get(), scount.data(), sdispl.data(), mpi_type<T>(), rbuf.get(),
                rcount.data(), rdispl.data(), mpi_type<T>(), comm.get());
  for (int d = 0; d < P; ++d)
    if (rcount[d]) scatter_runs(C, lld, rbuf.get() + rdispl[d], rows_of[d], cols_of[d], &beta);
}

// sub(C) = beta sub(C) on this process's part (beta = 0: zeros, C not read).
template <class T>
void scale_local(T beta, T* C, index_t lld, const LogicalDim& dr, const LogicalDim& dc,
                 index_t m, index_t n, const Grid& g) {
  auto mine = [&](const LogicalDim& d, index_t len) {
    std::vector<index_t> v;
    for (index_t x = 0; x < len; ++x)
      if (d.replicated() || d.cyc.owner(d.off + x) == g.coord(d.grid_rows)) v.push_back(d.local(x));
    return v;
  };
  auto rows = mine(dr, m), cols = mine(dc, n);
  for (index_t c : cols)
    for (index_t r : rows) C[r + c * lld] = beta == T(0) ? T(0) : beta * C[r + c * lld];
}

// ---- SUMMA on the block-cyclic layout itself: nothing redistributed ----
// With op(A) = A and op(B) = B, and sub(C)'s rows on the same process rows as sub(A)'s and its
// columns on the same process columns as sub(B)'s (what one descinit_ blocking per program
// gives), each process already holds the rows of C it owns in A and the columns in B, as one
// contiguous range of its local rows or columns. The k indices need no order: any run of them
// that one process column holds in consecutive local columns of A and one process row in
// consecutive local rows of B is a panel. With equal blockings of A's columns and B's rows on a
// square grid that is a process's whole share of k, so the panels are as wide as memory and
// the pipeline allow, where PDGEMM broadcasts one nb-wide block at a time: the owners broadcast
// them along the rows and columns of the BLACS grid, double-buffered under distmm's engine.

// The end (logical, exclusive) of the block of d that holds logical index x.
inline index_t block_end(const LogicalDim& d, index_t x) {
  const index_t b = d.cyc.block(d.off + x);
  return (b == 0 ? d.cyc.imb : d.cyc.imb + b * d.cyc.mb) - d.off;
}

struct Span {  // local indices first .. first + count - 1
  index_t first = 0, count = 0;
};
// The local indices of logical 0..len-1 that process coordinate `coord` holds: consecutive.
inline Span local_span(const LogicalDim& d, index_t len, int coord) {
  Span s;
  for (index_t x = 0; x < len;) {
    const index_t e = std::min(len, block_end(d, x));
    if (d.coord(x) == coord) {
      if (s.count == 0) s.first = d.local(x);
      s.count += e - x;
    }
    x = e;
  }
  return s;
}
inline bool same_owners(const LogicalDim& a, const LogicalDim& b, index_t len) {
  for (index_t x = 0; x < len; x = std::min({len, block_end(a, x), block_end(b, x)}))
    if (a.coord(x) != b.coord(x)) return false;
  return true;
}

struct BcPanel {
  int qa, qb;          // grid column holding A's columns, grid row holding B's rows
  index_t a0, b0, width;  // A's local columns a0.., B's local rows b0..
};
// Panels of at most wmax covering k: runs that stay on one (qa, qb) pair and in consecutive
// local columns of A and rows of B, in the order of their first index.
inline std::vector<BcPanel> k_panels(const LogicalDim& ak, const LogicalDim& bk, index_t k, index_t wmax) {
  std::vector<BcPanel> out;
  std::map<std::pair<int, int>, std::size_t> open;  // the run still growing per pair
  for (index_t x = 0; x < k;) {
    const index_t e = std::min({k, block_end(ak, x), block_end(bk, x)});
    const int qa = ak.coord(x), qb = bk.coord(x);
    while (x < e) {
      const index_t la = ak.local(x), lb = bk.local(x);
      auto [it, fresh] = open.try_emplace({qa, qb}, out.size());
      if (!fresh) {
        const BcPanel& p = out[it->second];
        if (p.width >= wmax || p.a0 + p.width != la || p.b0 + p.width != lb)
          it->second = out.size(), fresh = true;
      }
      if (fresh) out.push_back({qa, qb, la, lb, 0});
      BcPanel& p = out[it->second];
      const index_t w = std::min(e - x, wmax - p.width);
      p.width += w, x += w;
    }
  }
  return out;
}


// C(cr, cc) = alpha A(ar, panels) B(panels, bc) + beta C(cr, cc), all in the callers' local
// arrays; `wait` gets the time spent waiting for broadcasts. SUMMA's schedule on the block-cyclic
// panels, pipelined in the engine's host space (pipeline.hpp).
template <class T>
void block_cyclic_summa(Engine& e, T alpha, const T* A, index_t lda, Span ar, const T* B,
                        index_t ldb, Span bc, T beta, T* C, index_t ldc,
                        const std::vector<BcPanel>& panels, const Comm& grid_row, const Comm& grid_col, const Grid& g,
                        double& wait) {
  using Lane = DeviceSpace::Lane;
  const index_t mloc = ar.count, nloc = bc.count;
  index_t wmax = 0;
  for (const BcPanel& p : panels) wmax = std::max(wmax, p.width);
  const std::unique_ptr<DeviceSpace> sp = make_host_space(e);
  const std::unique_ptr<DeviceComm> row = sp->comm(grid_row), col = sp->comm(grid_col);
  AlignedPtr<T> abuf[2], bbuf[2];  // uninitialised: the broadcasts fill them
  const T* ap[2] = {nullptr, nullptr};
  index_t apld[2] = {1, 1};
  T* bp[2] = {nullptr, nullptr};
  T dummy[1] = {T(0)};
  auto post = [&](int t) {
    const BcPanel& p = panels[std::size_t(t)];
    const int slot = t % 2;
    const index_t w = p.width;
    if (!abuf[slot] && mloc > 0) abuf[slot] = aligned_alloc_array<T>(static_cast<std::size_t>(mloc * wmax));
    if (!bbuf[slot] && nloc > 0) bbuf[slot] = aligned_alloc_array<T>(static_cast<std::size_t>(wmax * nloc));
    T* a = abuf[slot] ? abuf[slot].get() : dummy;
    T* b = bp[slot] = bbuf[slot] ? bbuf[slot].get() : dummy;
    ap[slot] = a, apld[slot] = std::max<index_t>(1, mloc);
    // The owners send their columns of A in place when contiguous, else packed; B's rows are
    // strided in the local array, so they are packed.
    if (g.mycol == p.qa) {
      const T* src = A + ar.first + p.a0 * lda;
      if (lda == mloc)
        ap[slot] = src, a = const_cast<T*>(src);
      else
        sp->copy(a, std::max<index_t>(mloc, 1), src, lda, mloc, w, Lane::comm);
    }
    if (g.myrow == p.qb) sp->copy(b, std::max<index_t>(w, 1), B + p.b0 + bc.first * ldb, ldb, w, nloc, Lane::comm);
    row->broadcast(a, mloc * w, p.qa);
    col->broadcast(b, w * nloc, p.qb);
  };
  if (panels.empty()) return;
  std::optional<DeviceSpace::OutputHold> held;  // C may stay on a GPU across the panels
  if (mloc > 0 && nloc > 0) held.emplace(sp->hold_output(C, mloc, nloc, ldc));
  pipeline(
      *sp, static_cast<int>(panels.size()), post,
      [&](int t) {
        const index_t w = panels[std::size_t(t)].width;
        sp->gemm<T>(Op::N, Op::N, mloc, nloc, w, alpha, ap[t % 2], apld[t % 2], bp[t % 2], std::max<index_t>(w, 1),
                    t == 0 ? beta : T(1), C, ldc);
      },
      [&](auto&& wait_for_panel) {
        const auto w0 = std::chrono::steady_clock::now();
        wait_for_panel();
        wait += std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
      });
}

}  // namespace distmm::block_cyclic
