// libdistmm_scalapack.so: ScaLAPACK's PSGEMM, PDGEMM, PCGEMM and PZGEMM (Fortran ABI) answered
// by distmm. Load it with LD_PRELOAD in front of libscalapack, or link the CMake target
// distmm::scalapack before ScaLAPACK.
//
// A call: PBLAS's argument checks (same INFO, reported through PB_Cabort as PBLAS does, so
// PBLAS's tester sees its error exits), PBLAS's quick returns, then either the real routine
// (small problems, found with dlsym(RTLD_NEXT)) or distmm: the grid's communicator is built
// from the BLACS context, the algorithm (DISTMM_ALGO, default auto) chooses its layout of
// op(A) (m x k), op(B) (k x n) and C (m x n), one MPI_Alltoallv per matrix moves the block-
// cyclic sub-matrices (any IMB/INB, MB/NB, RSRC/CSRC, LLD, IA/JA offsets; op() applied while
// packing) into that layout, distmm multiplies C' = alpha op(A) op(B) and one more
// MPI_Alltoallv brings C' back, where sub(C) = beta sub(C) + C' (beta = 0: sub(C) is not read).
// Except where nothing needs to move: for N x N on operands whose blockings line up (the usual
// case: one descinit_ blocking for all three) and DISTMM_ALGO unset or auto, distmm runs SUMMA
// on the block-cyclic layout itself, with wide panels (block_cyclic_summa below), or for
// k-dominant shapes the k-split there (block_cyclic_ksplit.hpp, try_ksplit below).
//
// Environment:
//   DISTMM_ENGINE            node engine (default blas)
//   DISTMM_ALGO              distributed algorithm (default auto; naming one redistributes)
//   DISTMM_SCALAPACK_DIRECT  0: always redistribute; force: SUMMA on the block-cyclic layout
//                            whenever the operands line up, however narrow the panels;
//                            ksplit: the k-split whenever they line up
//   DISTMM_PANEL             that SUMMA's panel width (default k / max(P_r, P_c), 256..4096)
//   DISTMM_THREADS           threads per rank for the engine (default OMP_NUM_THREADS, else 1)
//   DISTMM_SCALAPACK_MIN     m*n*k below which the real routine answers (default below)
//   DISTMM_VERBOSE=1         lines on stderr at the first call (grid rank 0): what answers it,
//                            and its phase times; DISTMM_VERBOSE=2: every call; 3: also one line
//                            per rank from the k-split's balancer (rates, predicted and actual)
//   DISTMM_SCALAPACK_STATS   file: one JSON line per call (grid rank 0), with the phase times
//                            (maximum over the ranks) of the calls distmm answers
//   DISTMM_MEM_LIMIT         bytes per rank for the algorithms, e.g. 4G, 512M (default: the
//                            node's available memory over the grid's ranks on the node)
//   DISTMM_KSPLIT_BALANCE    0: the k-split keeps every piece where the layout puts it (default:
//                            the slowest ranks' last pieces move to the fastest)
//   DISTMM_KSPLIT_SKEW=R:F   tests: grid rank R reports F times its measured time to the balancer
// Each is parsed strictly (src/core/settings.hpp): a malformed value ends the job at the first
// call with one line naming it (drop_in_or_abort).
#include <dlfcn.h>
#include <mpi.h>
#include <omp.h>

#include <chrono>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "../../node/engine.hpp"
#include "../../src/core/json.hpp"
#include "../../src/core/settings.hpp"
#include "../../src/core/system.hpp"
#include "../algorithms/algorithm.hpp"
#include "block_cyclic_ksplit.hpp"
#include "../runtime/comm.hpp"
#include "../runtime/distribution.hpp"
#include "../runtime/overlap.hpp"
#include "../runtime/partition.hpp"
#include "../runtime/pipeline.hpp"

extern "C" {
void Cblacs_gridinfo(int ctxt, int* nprow, int* npcol, int* myrow, int* mycol);
void Cigsum2d(int ctxt, const char* scope, const char* top, int m, int n, int* A, int lda,
              int rdest, int cdest);
void PB_Cabort(int ctxt, const char* rout, int info);
}

namespace distmm {
namespace {

// Below this m*n*k the real routine answers (when there is one). Measured on 16 ranks (H100
// host, 4 x 4 grid, nb 64, f64, square, median of 5; docs/performance.md): SUMMA on the
// block-cyclic layout takes 0.65x PDGEMM's time at 256^3, 0.88x at 512^3, 1.03x at 1024^3 and
// 2048^3 (within the runs' spread), 0.65x at 8192^3; the redistributing path adds two
// all-to-alls and a plan, 3-5x ScaLAPACK's time up to 192^3 and 1.4-1.6x up to 384^3 (2 ranks,
// the CI machine). 512^3 keeps small transposed or mismatched calls off the redistributing path and
// costs the in-place path at most ~0.1 ms a call. DISTMM_SCALAPACK_MIN overrides it (0: distmm
// answers every call).
constexpr double kDefaultMinVolume = 512.0 * 512.0 * 512.0;

// PBLAS's internal descriptor (PBtools.h): the 9-entry BLOCK_CYCLIC_2D one is widened.
enum { DTYPE_ = 0, CTXT_, M_, N_, IMB_, INB_, MB_, NB_, RSRC_, CSRC_, LLD_, DLEN_ };
constexpr int kBlockCyclic = 1, kBlockCyclicInb = 2, kDescMult = 100, kBigNum = 10000;

void desc_ftoc(const int* in, int* out) {  // PB_CargFtoC
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

// PB_Cchkmat: checks sub(A) = A(IA:IA+M-1, JA:JA+N-1) (ia, ja 0-based) and its descriptor.
void chkmat(int ictxt, int M, int mpos0, int N, int npos0, int ia, int ja, const int* d,
            int dpos0, int* info) {
  if (*info >= 0) *info = kBigNum;
  else if (*info < -kDescMult) *info = -*info;
  else *info = -*info * kDescMult;
  const int mpos = mpos0 * kDescMult, npos = npos0 * kDescMult;
  const int iapos = (dpos0 - 2) * kDescMult, japos = (dpos0 - 1) * kDescMult;
  const int dpos = dpos0 * kDescMult + 1;
  int nprow, npcol, myrow, mycol;
  Cblacs_gridinfo(ictxt, &nprow, &npcol, &myrow, &mycol);
  auto low = [&](int v) { *info = std::min(*info, v); };
  auto finish = [&] {
    if (*info % kDescMult == 0) *info = -(*info / kDescMult);
    else *info = -*info;
  };
  if (M < 0) low(mpos);
  if (N < 0) low(npos);
  if (ia < 0) low(iapos);
  if (ja < 0) low(japos);
  if (d[DTYPE_] != kBlockCyclicInb) {
    low(dpos + DTYPE_);
    finish();
    return;
  }
  if (d[CTXT_] != ictxt) {
    low(dpos + CTXT_);
    finish();
    return;
  }
  if (d[IMB_] < 1) low(dpos + IMB_);
  if (d[INB_] < 1) low(dpos + INB_);
  if (d[MB_] < 1) low(dpos + MB_);
  if (d[NB_] < 1) low(dpos + NB_);
  if (d[RSRC_] < -1 || d[RSRC_] >= nprow) low(dpos + RSRC_);
  if (d[CSRC_] < -1 || d[CSRC_] >= npcol) low(dpos + CSRC_);
  if (M == 0 || N == 0) {
    if (d[M_] < 0) low(dpos + M_);
    if (d[N_] < 0) low(dpos + N_);
    if (d[LLD_] < 1) low(dpos + LLD_);
  } else {
    if (d[M_] < 1) low(dpos + M_);
    if (d[N_] < 1) low(dpos + N_);
    if (d[M_] >= 1 && d[N_] >= 1) {
      if (ia + M > d[M_]) low(iapos);
      if (ja + N > d[N_]) low(japos);
    }
    if (*info == kBigNum) {
      const index_t np = CyclicDim{d[IMB_], d[MB_], d[RSRC_], nprow}.count(d[M_], myrow);
      if (d[LLD_] < std::max<index_t>(1, np)) {
        const index_t nq = CyclicDim{d[INB_], d[NB_], d[CSRC_], npcol}.count(d[N_], mycol);
        if (d[LLD_] < 1) low(dpos + LLD_);
        else if (nq > 0) low(dpos + LLD_);
      }
    }
  }
  if (*info == kBigNum) *info = 0;
  else finish();
}

template <class T> struct Names;
template <> struct Names<float> { static constexpr const char *sym = "psgemm_", *name = "PSGEMM", *lower = "psgemm"; };
template <> struct Names<double> { static constexpr const char *sym = "pdgemm_", *name = "PDGEMM", *lower = "pdgemm"; };
template <> struct Names<std::complex<float>> { static constexpr const char *sym = "pcgemm_", *name = "PCGEMM", *lower = "pcgemm"; };
template <> struct Names<std::complex<double>> { static constexpr const char *sym = "pzgemm_", *name = "PZGEMM", *lower = "pzgemm"; };

template <class T>
using PgemmFn = void (*)(const char*, const char*, const int*, const int*, const int*, const T*,
                         const T*, const int*, const int*, const int*, const T*, const int*,
                         const int*, const int*, const T*, T*, const int*, const int*,
                         const int*, std::size_t, std::size_t);

template <class T>
T conj_if(T v, bool c) {
  if constexpr (std::is_floating_point_v<T>) return (void)c, v;
  else return c ? std::conj(v) : v;
}

// ---- the call's settings, from the environment's (src/core/settings.hpp), read once ----
struct DropIn {
  double min_volume = kDefaultMinVolume;
  int verbose = 0;  // 1: the first call, 2: every call
  std::string stats, engine;
  Algorithm algo = Algorithm::automatic;
  // N x N on aligned operands: a schedule on the block-cyclic layout itself. 0: never, 1: the
  // k-split where it moves far fewer words than SUMMA, else SUMMA when its panels are wide
  // enough, 2 (DISTMM_SCALAPACK_DIRECT=force): SUMMA whenever the operands line up, 3
  // (DISTMM_SCALAPACK_DIRECT=ksplit): the k-split whenever they line up.
  int direct = 1;
  index_t panel = 0;      // the direct path's panel width (0: from the shape)
  int threads = 1;
  std::optional<std::size_t> mem_limit;  // bytes per rank (none: the node's share)
  KSplitBalance balance;
  explicit DropIn(const Settings& s)
      : min_volume(s.scalapack_min.value_or(kDefaultMinVolume)), verbose(s.verbose), stats(s.scalapack_stats),
        engine(s.engine), algo(*parse_algorithm(s.algo)), panel(s.panel),
        threads(s.threads.value_or(omp_get_max_threads())), mem_limit(s.mem_limit) {
    const std::string& d = s.scalapack_direct;
    direct = d == "force" ? 2 : d == "ksplit" ? 3 : d == "1";
    // An algorithm named explicitly is run on its own layout (the operands redistributed).
    if (algo != Algorithm::automatic) direct = 0;
    balance.enabled = s.ksplit_balance;
    balance.trace = s.verbose >= 3;
    balance.skew_rank = s.ksplit_skew.rank, balance.skew = s.ksplit_skew.factor;
  }
};
const DropIn& drop_in() {
  static const DropIn d(checked_settings());
  return d;
}

// The settings at a call: a malformed one ends the caller's program, which cannot go on with
// settings it did not mean. The grid's first rank says so, once, and ends the job; the others
// wait for that, and say it themselves only if it did not come (their environment differed).
const DropIn& drop_in_or_abort(bool root) {
  try {
    return drop_in();
  } catch (const SettingError& e) {
    if (!root) std::this_thread::sleep_for(std::chrono::seconds(10));
    std::fprintf(stderr, "distmm: error: %s\n", e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 2);
    std::abort();  // MPI_Abort does not return
  }
}

// ---- the grid's communicator (ranks in row-major grid order) and its plans ----
// Caches stay consistent across ranks: a communicator is known by its members and its grid
// shape (every member creates it, together, on first use), and its plans are made and dropped
// by the calls on it, which all its members make alike.
struct Plan {
  std::unique_ptr<DistAlgorithm> algo;
  std::vector<Piece> a, b, c;  // pieces of every rank
};
struct GridComm {
  std::unique_ptr<Comm> comm;
  Comm row, col;  // this rank's process row (ranks by grid column) and column (by grid row)
  std::size_t mem_limit = 0;  // bytes per rank: the node's available memory over its grid ranks
  std::map<std::tuple<index_t, index_t, index_t, int>, Plan> plans;
};

GridComm& grid_comm(int ctxt, int nprow, int npcol, int myrow, int mycol) {
  // Members by MPI_COMM_WORLD rank (BLACS' system handles of a context are not stable values:
  // blacs_get(ctxt, 10) makes a new one per call), learnt through the context itself.
  static std::map<std::vector<int>, GridComm> cache;
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  const int P = nprow * npcol;
  std::vector<int> members(P, 0);
  members[myrow * npcol + mycol] = me;
  Cigsum2d(ctxt, "All", " ", P, 1, members.data(), P, -1, -1);  // every grid rank's world rank
  // The same ranks in another grid shape have other rows and columns: the shape is in the key.
  std::vector<int> key = members;
  key.push_back(nprow), key.push_back(npcol);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const MPI_Comm sys = MPI_COMM_WORLD;
  MPI_Group all, grp;
  MPI_Comm_group(sys, &all);
  MPI_Group_incl(all, P, members.data(), &grp);
  MPI_Comm c;
  MPI_Comm_create_group(sys, grp, 17017, &c);
  MPI_Group_free(&grp);
  MPI_Group_free(&all);
  GridComm& g = cache[key];
  g.comm = std::make_unique<Comm>(c, true);
  g.row = g.comm->split(myrow, mycol);
  g.col = g.comm->split(mycol, myrow);
  // distmm's default memory share splits MPI_COMM_WORLD, which ranks outside the grid never
  // join: the share is taken over the grid's ranks on this node instead.
  MPI_Comm node;
  MPI_Comm_split_type(c, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local = 1;
  MPI_Comm_size(node, &local);
  MPI_Comm_free(&node);
  g.mem_limit = drop_in().mem_limit.value_or(available_memory_bytes() / std::size_t(std::max(1, local)));
  // Every rank plans with the same limit (the plans' message sizes depend on it).
  unsigned long long lim = g.mem_limit;
  MPI_Allreduce(MPI_IN_PLACE, &lim, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, c);
  g.mem_limit = static_cast<std::size_t>(lim);
  return g;
}

Engine& engine() {
  static std::unique_ptr<Engine> e = [] {
    EngineOptions o;
    o.threads = drop_in().threads;
    // GPU engines: ranks of a node spread over its GPUs (the launcher's node-local rank).
    for (const char* v : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
      if (const char* s = environment(v)) {
        o.device = std::atoi(s);
        break;
      }
    return make_engine(drop_in().engine, o);
  }();
  return *e;
}

// ---- the algorithm for a shape on a communicator, with every rank's pieces ----

Plan& plan_for(GridComm& gc, GemmShape s, Dtype dt) {
  auto key = std::make_tuple(s.m, s.n, s.k, static_cast<int>(dt));
  auto it = gc.plans.find(key);
  if (it != gc.plans.end()) return it->second;
  if (gc.plans.size() >= 16) gc.plans.clear();
  const Comm& comm = *gc.comm;
  AlgoOptions o;
  o.dtype = dt;
  o.engine = &engine();
  o.mem_limit = gc.mem_limit;
  Plan p;
  p.algo = make_algorithm(drop_in().algo, comm, s, o);
  p.a = allgather_pieces(p.algo->piece_a(), comm);
  p.b = allgather_pieces(p.algo->piece_b(), comm);
  p.c = allgather_pieces(p.algo->piece_c(), comm);
  return gc.plans[key] = std::move(p);
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
std::vector<index_t> select(const std::vector<Run>& runs, const LogicalDim& d, int coord, bool all) {
  std::vector<index_t> out;
  for (const Run& r : runs)
    for (index_t x = r.global; x < r.global + r.length; ++x)
      if (all || d.coord(x) == coord) out.push_back(d.local(x));
  return out;
}

// This rank's local indices (in `runs`' local order) held, block-cyclically, by each process
// coordinate 0..np-1 of the dimension.
std::vector<std::vector<index_t>> buckets(const std::vector<Run>& runs, const LogicalDim& d,
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

int to_count(std::size_t n) {
  if (n > static_cast<std::size_t>(INT_MAX))
    throw UsageError("a message above 2^31 elements: use more ranks");
  return static_cast<int>(n);
}

// A list of local indices as runs of consecutive ones (first, length): the block-cyclic blocks
// become memcpy-sized pieces instead of one indexed access per element.
std::vector<std::pair<index_t, index_t>> index_runs(const std::vector<index_t>& idx) {
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
index_t block_end(const LogicalDim& d, index_t x) {
  const index_t b = d.cyc.block(d.off + x);
  return (b == 0 ? d.cyc.imb : d.cyc.imb + b * d.cyc.mb) - d.off;
}

struct Span {  // local indices first .. first + count - 1
  index_t first = 0, count = 0;
};
// The local indices of logical 0..len-1 that process coordinate `coord` holds: consecutive.
Span local_span(const LogicalDim& d, index_t len, int coord) {
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
bool same_owners(const LogicalDim& a, const LogicalDim& b, index_t len) {
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
std::vector<BcPanel> k_panels(const LogicalDim& ak, const LogicalDim& bk, index_t k, index_t wmax) {
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

struct Phases {  // seconds on one rank (reported: the maximum over the grid's ranks)
  double setup = 0;  // the grid's communicators (first call on a grid), the plan
  double a = 0, b = 0, c_in = 0, multiply = 0, wait = 0, c_out = 0;
  double pack = 0;  // the k-split: packing and posting its sends
  int moved = -1;   // the k-split: pieces its balancer moved (-1: not the k-split)
};
double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// C(cr, cc) = alpha A(ar, panels) B(panels, bc) + beta C(cr, cc), all in the callers' local
// arrays; `wait` gets the time spent waiting for broadcasts. SUMMA's schedule on the block-cyclic
// panels, pipelined in the engine's host space (pipeline.hpp).
template <class T>
void block_cyclic_summa(Engine& e, T alpha, const T* A, index_t lda, Span ar, const T* B,
                        index_t ldb, Span bc, T beta, T* C, index_t ldc,
                        const std::vector<BcPanel>& panels, const GridComm& gc, const Grid& g,
                        double& wait) {
  using Lane = DeviceSpace::Lane;
  const index_t mloc = ar.count, nloc = bc.count;
  index_t wmax = 0;
  for (const BcPanel& p : panels) wmax = std::max(wmax, p.width);
  const std::unique_ptr<DeviceSpace> sp = make_host_space(e);
  const std::unique_ptr<DeviceComm> row = sp->comm(gc.row), col = sp->comm(gc.col);
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
        wait += since(w0);
      });
}

void append_stats(const char* routine, int m, int n, int k, const std::string& algo, double sec,
                  bool handed, const nlohmann::json& extra = {}) {
  const std::string& path = drop_in().stats;
  if (path.empty()) return;
  try {  // statistics must never fail the caller's PxGEMM
    nlohmann::json j = {{"routine", routine}, {"m", m}, {"n", n}, {"k", k}, {"algorithm", algo},
                        {"seconds", sec}, {"handed_to_scalapack", handed}};
    if (extra.is_object()) j.update(extra);
    append_json_line(path, j);
  } catch (const UsageError&) {
  }
}

// Phase times of a call answered by distmm, the maximum over the grid's ranks (collective;
// only when someone reads them): into the statistics line and, under DISTMM_VERBOSE (at the
// first call; DISTMM_VERBOSE=2: every call), one line on stderr.
void report_phases(const char* name, const char* lower, int m, int n, int k,
                   const std::string& path, const std::string& algo, const Phases& ph, double sec,
                   bool verbose, const Comm& comm, bool root) {
  // Whether to reduce is decided from the environment alone, the same on every rank (`verbose`
  // depends on this process's first call, which differs between the ranks of a grid when some
  // of them called on another grid before).
  const DropIn& st = drop_in();
  if (st.stats.empty() && st.verbose == 0) return;
  // Maxima and (as maxima of the negated values, in the same reduction) minima over the ranks:
  // the spread of equal products between ranks is what a shared host costs a call.
  double v[18] = {ph.a, ph.b, ph.c_in, ph.multiply, ph.wait, ph.c_out, sec, ph.setup, ph.pack}, r[18];
  for (int i = 0; i < 9; ++i) v[9 + i] = -v[i];
  MPI_Reduce(v, r, 18, MPI_DOUBLE, MPI_MAX, 0, comm.get());
  if (!root) return;
  const double* mx = r;
  double mn[9];
  for (int i = 0; i < 9; ++i) mn[i] = -r[9 + i];
  if (verbose)
    std::fprintf(stderr, "distmm: %s %d x %d x %d (%s, %s): %.3f s = setup %.3f, redistribute "
                 "A %.3f, B %.3f, C in %.3f, pack %.3f, multiply %.3f (fastest rank %.3f; waiting "
                 "for panels %.3f), redistribute C out %.3f (max over ranks)%s\n", name, m, n, k,
                 path.c_str(), algo.c_str(), mx[6], mx[7], mx[0], mx[1], mx[2], mx[8], mx[3], mn[3],
                 mx[4], mx[5],
                 ph.moved >= 0 ? ("; pieces moved by the balancer: " + std::to_string(ph.moved)).c_str() : "");
  auto phases = [&](const double* x, const char* total) {
    return nlohmann::json{{"setup", x[7]}, {"redistribute_a", x[0]}, {"redistribute_b", x[1]},
                          {"redistribute_c_in", x[2]}, {"pack", x[8]}, {"multiply", x[3]},
                          {"multiply_waiting", x[4]}, {"redistribute_c_out", x[5]}, {total, x[6]}};
  };
  nlohmann::json extra = {{"path", path}, {"phases", phases(mx, "seconds_max")}, {"phases_min", phases(mn, "seconds")}};
  if (ph.moved >= 0) extra["pieces_moved"] = ph.moved;
  append_stats(lower, m, n, k, algo, sec, false, extra);
}

// This rank's rows of sub(A) and sub(C) and columns of sub(B) and sub(C), as local spans.
struct LocalSpans {
  Span a, b, r, c;
};
LocalSpans local_spans(const LogicalDim& ar, const LogicalDim& bc, const LogicalDim& cr,
                       const LogicalDim& cc, index_t m, index_t n, const Grid& g) {
  return {local_span(ar, m, g.myrow), local_span(bc, n, g.mycol), local_span(cr, m, g.myrow),
          local_span(cc, n, g.mycol)};
}
// The DISTMM_VERBOSE line of a call answered on the BLACS grid's own layout.
template <class T>
void say_in_place(int m, int n, int k, const std::string& algo, const Grid& g,
                  const std::string& detail, int ranks) {
  std::fprintf(stderr, "distmm: %s answered by distmm: %d x %d x %d, algorithm %s (the %dx%d "
               "BLACS grid's own layout, %s), engine %s, %d ranks\n", Names<T>::name, m, n, k,
               algo.c_str(), g.nprow, g.npcol, detail.c_str(), engine().name().c_str(), ranks);
}

// The k-split on the block-cyclic layout (block_cyclic_ksplit.hpp), where it moves at most
// kKSplitWords of SUMMA's words (the most any rank receives, both counted from the layout),
// its buffers fit the memory share, and k's runs are not fragmented; or wherever the operands
// line up under DISTMM_SCALAPACK_DIRECT=ksplit. Every rank decides alike (the counts come from
// the descriptors). On one 16-core node (H100 host, 4 x 4, f64, docs/performance.md) the two
// tie at 4096 x 4096 x 65536 (0.45 of SUMMA's words; 3.53 s and 3.63 s, medians of 5), where
// shared memory makes words cheap; at 8192 x 8192 x 65536 (0.6 of the words, a partial C of
// 8192^2 per rank to sum) an earlier version of the k-split took 1.4x SUMMA's time. Between
// nodes the words cost more: 0.5 keeps the k-split to the clearly k-dominant shapes.
constexpr double kKSplitWords = 0.5;

template <class T>
bool try_ksplit(T alpha, const T* A, const int* Ad, const T* B, const int* Bd, T beta, T* C,
                const int* Cd, int m, int n, int k, const LogicalDim& ar, const LogicalDim& ac,
                const LogicalDim& br, const LogicalDim& bc, const LogicalDim& cr,
                const LogicalDim& cc, const Grid& g, GridComm& gc, Phases& ph,
                std::chrono::steady_clock::time_point t0, bool verbose, bool root) {
  const DropIn& st = drop_in();
  if (st.direct != 1 && st.direct != 3) return false;
  const auto panels = k_panels(ac, br, k, k);  // maximal runs
  if (st.direct == 1 && double(k) / double(panels.size()) < std::min<double>(k, 32)) return false;
  std::vector<KRun> runs;
  for (const BcPanel& p : panels) runs.push_back({p.qa, p.qb, p.a0, p.b0, p.width});
  std::vector<index_t> rows(g.nprow), cols(g.npcol);
  for (int r = 0; r < g.nprow; ++r) rows[r] = local_span(ar, m, r).count;
  for (int c = 0; c < g.npcol; ++c) cols[c] = local_span(bc, n, c).count;
  const KSplitLayout L = ksplit_layout(g.nprow, g.npcol, g.myrow, g.mycol, rows, cols, runs);
  const int P = g.nprow * g.npcol;
  if (st.direct == 1) {
    // SUMMA's words on rank (r, c): A's columns of k that other process columns hold, for its
    // rows, and B's rows that other process rows hold, for its columns.
    std::vector<index_t> ka(g.npcol, 0), kb(g.nprow, 0);
    for (const KRun& x : runs) ka[x.qa] += x.width, kb[x.qb] += x.width;
    double summa = 0;
    for (int t = 0; t < P; ++t) {
      const int r = t / g.npcol, c = t % g.npcol;
      summa = std::max(summa, double(rows[r]) * double(k - ka[c]) + double(cols[c]) * double(k - kb[r]));
    }
    // The k-split's words and bytes on this rank, the most over the grid (one small allreduce
    // rather than every rank's counts on every rank, quadratic in P).
    const int me = g.myrow * g.npcol + g.mycol;
    double most[2] = {ksplit_words(L, me), ksplit_bytes(L, me, sizeof(T))};
    MPI_Allreduce(MPI_IN_PLACE, most, 2, MPI_DOUBLE, MPI_MAX, gc.comm->get());
    if (!(most[0] < kKSplitWords * summa) || most[1] > double(gc.mem_limit)) return false;
  }
  const Comm& comm = *gc.comm;
  const LocalSpans sp = local_spans(ar, bc, cr, cc, m, n, g);
  const std::string algo = "block-cyclic k-split";
  if (root && verbose) say_in_place<T>(m, n, k, algo, g, "k in " + std::to_string(P) + " parts", P);
  ph.setup = since(t0);
  KSplitTimes kt;
  const index_t lda = Ad[LLD_], ldb = Bd[LLD_], ldc = Cd[LLD_];
  block_cyclic_ksplit<T>(engine(), alpha, A + sp.a.first, lda, B + sp.b.first * ldb, ldb, beta,
                         C + sp.r.first + sp.c.first * ldc, ldc, L, comm, kt, st.balance);
  ph.pack = kt.pack, ph.multiply = kt.multiply, ph.wait = kt.wait, ph.c_out = kt.combine;
  ph.moved = kt.moved;
  const double sec = since(t0);
  report_phases(Names<T>::name, Names<T>::lower, m, n, k, "block-cyclic", algo, ph, sec, verbose,
                comm, root);
  return true;
}

bool& first_call() {
  static bool first = true;
  return first;
}

template <class T>
void pgemm(const char* transa, const char* transb, const int* M, const int* N, const int* K,
           const T* alpha, const T* A, const int* IA, const int* JA, const int* DESCA,
           const T* B, const int* IB, const int* JB, const int* DESCB, const T* beta, T* C,
           const int* IC, const int* JC, const int* DESCC, std::size_t la, std::size_t lb) {
  const char ta = static_cast<char>(std::toupper(static_cast<unsigned char>(transa[0])));
  const char tb = static_cast<char>(std::toupper(static_cast<unsigned char>(transb[0])));
  const bool nota = ta == 'N', notb = tb == 'N';
  int Ad[DLEN_], Bd[DLEN_], Cd[DLEN_];
  desc_ftoc(DESCA, Ad), desc_ftoc(DESCB, Bd), desc_ftoc(DESCC, Cd);
  const int ia = *IA - 1, ja = *JA - 1, ib = *IB - 1, jb = *JB - 1, ic = *IC - 1, jc = *JC - 1;
  const int ctxt = Ad[CTXT_];
  Grid g{};
  Cblacs_gridinfo(ctxt, &g.nprow, &g.npcol, &g.myrow, &g.mycol);
  // PBLAS's argument checks, in PDGEMM's order. An invalid context (a process outside the
  // grid: BLACS gave it -1) is PBLAS's -(1001 + CTXT_), reported like every other error.
  int info = g.nprow == -1 ? -(1001 + CTXT_) : 0;
  if (info) {
  } else if (!nota && ta != 'T' && ta != 'C') info = -1;
  else if (!notb && tb != 'T' && tb != 'C') info = -2;
  if (g.nprow != -1) {
    if (nota) chkmat(ctxt, *M, 3, *K, 5, ia, ja, Ad, 10, &info);
    else chkmat(ctxt, *K, 5, *M, 3, ia, ja, Ad, 10, &info);
    if (notb) chkmat(ctxt, *K, 5, *N, 4, ib, jb, Bd, 14, &info);
    else chkmat(ctxt, *N, 4, *K, 5, ib, jb, Bd, 14, &info);
    chkmat(ctxt, *M, 3, *N, 4, ic, jc, Cd, 19, &info);
  }
  if (info) {
    PB_Cabort(ctxt, Names<T>::name, info);
    return;
  }
  const bool root = g.myrow == 0 && g.mycol == 0;
  const DropIn& st = drop_in_or_abort(root);  // at the first call, whatever it asks
  const T a = *alpha, b = *beta;
  const int m = *M, n = *N, k = *K;
  if (m == 0 || n == 0 || ((a == T(0) || k == 0) && b == T(1))) return;

  const auto t0 = std::chrono::steady_clock::now();
  auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  auto dim = [&](const int* d, bool rows, int off) {
    return rows ? LogicalDim{CyclicDim{d[IMB_], d[MB_], d[RSRC_], g.nprow}, off, true}
                : LogicalDim{CyclicDim{d[INB_], d[NB_], d[CSRC_], g.npcol}, off, false};
  };
  const LogicalDim cr = dim(Cd, true, ic), cc = dim(Cd, false, jc);
  if (a == T(0) || k == 0) {  // sub(C) = beta sub(C)
    scale_local(b, C, Cd[LLD_], cr, cc, m, n, g);
    if (root) append_stats(Names<T>::lower, m, n, k, "scale", seconds(), false);
    return;
  }

  // Small problems (and replicated operands) go to the real routine when there is one.
  static PgemmFn<T> real = [] {
    auto f = reinterpret_cast<PgemmFn<T>>(dlsym(RTLD_NEXT, Names<T>::sym));
    Dl_info mine{}, found{};  // never ourselves
    if (f && dladdr(reinterpret_cast<void*>(&drop_in), &mine) &&
        dladdr(reinterpret_cast<void*>(f), &found) && mine.dli_fbase == found.dli_fbase)
      f = nullptr;
    return f;
  }();
  const bool replicated = Ad[RSRC_] < 0 || Ad[CSRC_] < 0 || Bd[RSRC_] < 0 || Bd[CSRC_] < 0 ||
                          Cd[RSRC_] < 0 || Cd[CSRC_] < 0;
  const double volume = double(m) * double(n) * double(k);
  const bool small = volume < st.min_volume;
  if (real && (small || replicated)) {
    if (!small && root)
      std::fprintf(stderr, "distmm: %s %d x %d x %d has a replicated operand (RSRC/CSRC = -1): "
                   "handed to ScaLAPACK\n", Names<T>::name, m, n, k);
    if (root && st.verbose && first_call())
      std::fprintf(stderr, "distmm: %s %d x %d x %d below DISTMM_SCALAPACK_MIN (%g): handed to "
                   "ScaLAPACK\n", Names<T>::name, m, n, k, st.min_volume);
    first_call() = false;
    real(transa, transb, M, N, K, alpha, A, IA, JA, DESCA, B, IB, JB, DESCB, beta, C, IC, JC,
         DESCC, la, lb);
    if (root) append_stats(Names<T>::lower, m, n, k, "scalapack", seconds(), true);
    return;
  }

  try {
    GridComm& gc = grid_comm(ctxt, g.nprow, g.npcol, g.myrow, g.mycol);
    const Comm& comm = *gc.comm;
    const int me = comm.rank();
    const bool verbose = st.verbose >= 2 || (st.verbose && first_call());
    first_call() = false;
    // op(sub(A)) is m x k: its rows are A's rows (N) or columns (T, C).
    const LogicalDim ar = nota ? dim(Ad, true, ia) : dim(Ad, false, ja);
    const LogicalDim ac = nota ? dim(Ad, false, ja) : dim(Ad, true, ia);
    const LogicalDim br = notb ? dim(Bd, true, ib) : dim(Bd, false, jb);
    const LogicalDim bc = notb ? dim(Bd, false, jb) : dim(Bd, true, ib);
    Phases ph;

    // The block-cyclic layout as it is, when the operands line up (see block_cyclic_summa and
    // block_cyclic_ksplit.hpp).
    if (st.direct && nota && notb && !replicated && same_owners(ar, cr, m) &&
        same_owners(bc, cc, n)) {
      if (try_ksplit<T>(a, A, Ad, B, Bd, b, C, Cd, m, n, k, ar, ac, br, bc, cr, cc, g, gc, ph,
                        t0, verbose, root))
        return;
      index_t wcap = st.panel > 0 ? st.panel
                         : std::clamp<index_t>((k + std::max(g.nprow, g.npcol) - 1) /
                                                   std::max(g.nprow, g.npcol), 256, 4096);
      // Two panels of A and of B in flight must fit the memory share (the same on every rank).
      const double rows = double(m) / g.nprow + Ad[MB_] + double(n) / g.npcol + Bd[NB_];
      wcap = std::max<index_t>(1, std::min<index_t>(
                 wcap, index_t(double(gc.mem_limit) / (2 * rows * sizeof(T)))));
      auto panels = k_panels(ac, br, k, wcap);
      // Fragmented panels (A's and B's blockings of k disagree, a non-square grid) would make
      // many small broadcasts and products: those operands are redistributed instead.
      const bool wide =
          st.direct == 2 || double(k) / double(panels.size()) >= std::min<double>(k, 32);
      if (wide) {
        const LocalSpans sp = local_spans(ar, bc, cr, cc, m, n, g);
        const std::string algo = "block-cyclic summa";
        if (root && verbose)
          say_in_place<T>(m, n, k, algo, g, std::to_string(panels.size()) + " panels", comm.size());
        const auto t1 = std::chrono::steady_clock::now();
        ph.setup = std::chrono::duration<double>(t1 - t0).count();
        block_cyclic_summa<T>(engine(), a, A, Ad[LLD_], sp.a, B, Bd[LLD_], sp.b, b,
                              C + sp.r.first + sp.c.first * index_t(Cd[LLD_]), Cd[LLD_], panels,
                              gc, g, ph.wait);
        ph.multiply = since(t1);
        report_phases(Names<T>::name, Names<T>::lower, m, n, k, "block-cyclic", algo, ph,
                      seconds(), verbose, comm, root);
        return;
      }
    }

    Plan& plan = plan_for(gc, {m, n, k}, dtype_of<T>());
    if (root && verbose)
      std::fprintf(stderr, "distmm: %s answered by distmm: %d x %d x %d, algorithm %s (%s), "
                   "engine %s, %d ranks\n", Names<T>::name, m, n, k, plan.algo->name().c_str(),
                   plan.algo->layout().c_str(), engine().name().c_str(), comm.size());
    auto t1 = std::chrono::steady_clock::now();
    ph.setup = std::chrono::duration<double>(t1 - t0).count();
    auto Al = to_layout<T>(A, Ad[LLD_], !nota, ta == 'C', ar, ac, plan.a, me, g, comm);
    ph.a = since(t1), t1 = std::chrono::steady_clock::now();
    auto Bl = to_layout<T>(B, Bd[LLD_], !notb, tb == 'C', br, bc, plan.b, me, g, comm);
    ph.b = since(t1), t1 = std::chrono::steady_clock::now();
    const Piece &pa = plan.a[me], &pb = plan.b[me], &pc = plan.c[me];
    std::vector<T> Cl(static_cast<std::size_t>(pc.rows() * pc.cols()), T(0));
    T dummy[1] = {T(0)};
    auto ptr = [&](auto& v) { return v.empty() ? dummy : v.data(); };
    plan.algo->multiply<T>(engine(), a,
                           MatrixView<const T>{ptr(Al), pa.rows(), pa.cols(), std::max<index_t>(1, pa.rows())},
                           MatrixView<const T>{ptr(Bl), pb.rows(), pb.cols(), std::max<index_t>(1, pb.rows())},
                           T(0), MatrixView<T>{ptr(Cl), pc.rows(), pc.cols(), std::max<index_t>(1, pc.rows())});
    Al = {}, Bl = {};
    ph.multiply = since(t1), t1 = std::chrono::steady_clock::now();
    from_layout<T>(Cl, b, C, Cd[LLD_], cr, cc, plan.c, me, g, comm);
    ph.c_out = since(t1);
    report_phases(Names<T>::name, Names<T>::lower, m, n, k, "redistributed", plan.algo->name(),
                  ph, seconds(), verbose, comm, root);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "distmm: %s %d x %d x %d failed: out of memory on this process: run more "
                 "processes, or set DISTMM_MEM_LIMIT (bytes per process) below what is free\n",
                 Names<T>::name, m, n, k);
    MPI_Abort(MPI_COMM_WORLD, 1);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "distmm: %s %d x %d x %d failed: %s\n", Names<T>::name, m, n, k, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

}  // namespace
}  // namespace distmm

// The Fortran entry points: every argument by reference, the two character lengths trail.
#define DISTMM_PXGEMM(NAME, T)                                                                   \
  extern "C" __attribute__((visibility("default"))) void NAME(                                 \
      const char* ta, const char* tb, const int* m, const int* n, const int* k, const T* alpha, \
      const T* a, const int* ia, const int* ja, const int* desca, const T* b, const int* ib,    \
      const int* jb, const int* descb, const T* beta, T* c, const int* ic, const int* jc,       \
      const int* descc, std::size_t la, std::size_t lb) {                                       \
    distmm::pgemm<T>(ta, tb, m, n, k, alpha, a, ia, ja, desca, b, ib, jb, descb, beta, c, ic,  \
                     jc, descc, la, lb);                                                        \
  }
DISTMM_PXGEMM(psgemm_, float)
DISTMM_PXGEMM(pdgemm_, double)
DISTMM_PXGEMM(pcgemm_, std::complex<float>)
DISTMM_PXGEMM(pzgemm_, std::complex<double>)
#undef DISTMM_PXGEMM
