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
// on the block-cyclic layout itself, with wide panels (block_cyclic_summa, block_cyclic.hpp), or for
// k-dominant shapes the k-split there (block_cyclic_ksplit.hpp): plan_block_cyclic_direct
// (mpi/algorithms/block_cyclic_direct.hpp) decides, the same decision MultiplyPlan takes.
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
#include "../algorithms/block_cyclic_direct.hpp"
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

using namespace block_cyclic;

// Below this m*n*k the real routine answers (when there is one). SUMMA on the block-cyclic
// layout keeps up with PDGEMM at every size, so it needs no threshold of its own; the
// redistributing path adds two all-to-alls and a plan, which small calls do not repay. 512^3
// keeps small transposed or mismatched calls off that path at a small cost to the in-place one
// (docs/performance.md, "Measurements behind the code": kDefaultMinVolume).
// DISTMM_SCALAPACK_MIN overrides it (0: distmm answers every call).
constexpr double kDefaultMinVolume = 512.0 * 512.0 * 512.0;

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
    balance.skew = s.ksplit_skew;
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

struct Phases {  // seconds on one rank (reported: the maximum over the grid's ranks)
  double setup = 0;  // the grid's communicators (first call on a grid), the plan
  double a = 0, b = 0, c_in = 0, multiply = 0, wait = 0, c_out = 0;
  double pack = 0;  // the k-split: packing and posting its sends
  int moved = -1;   // the k-split: pieces its balancer moved (-1: not the k-split)
};
double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
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

// The DISTMM_VERBOSE line of a call answered on the BLACS grid's own layout.
template <class T>
void say_in_place(int m, int n, int k, const std::string& algo, const Grid& g,
                  const std::string& detail, int ranks) {
  std::fprintf(stderr, "distmm: %s answered by distmm: %d x %d x %d, algorithm %s (the %dx%d "
               "BLACS grid's own layout, %s), engine %s, %d ranks\n", Names<T>::name, m, n, k,
               algo.c_str(), g.nprow, g.npcol, detail.c_str(), engine().name().c_str(), ranks);
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

    // The block-cyclic layout as it is, when the operands line up (block_cyclic_direct.hpp: the
    // k-split or SUMMA on the caller's arrays, nothing redistributed).
    using Mode = BlockCyclicDirectOptions::Mode;
    const Mode mode = st.direct == 0 ? Mode::off : st.direct == 2 ? Mode::summa : st.direct == 3 ? Mode::ksplit
                                                                                   : Mode::automatic;
    const BlockCyclicDirect direct = plan_block_cyclic_direct(
        {&comm, &gc.row, &gc.col, g}, nota ? Op::N : Op::T, notb ? Op::N : Op::T, ar, ac, br, bc, cr, cc, m, n, k,
        sizeof(T), {mode, st.panel, gc.mem_limit});
    if (direct) {
      if (root && verbose) say_in_place<T>(m, n, k, direct.name(), g, direct.detail(), comm.size());
      const auto t1 = std::chrono::steady_clock::now();
      ph.setup = std::chrono::duration<double>(t1 - t0).count();
      KSplitTimes kt;
      direct.execute<T>(engine(), a, A, Ad[LLD_], B, Bd[LLD_], b, C, Cd[LLD_], kt, st.balance);
      if (direct.kind == BlockCyclicDirect::Kind::ksplit)
        ph.pack = kt.pack, ph.multiply = kt.multiply, ph.wait = kt.wait, ph.c_out = kt.combine, ph.moved = kt.moved;
      else
        ph.wait = kt.wait, ph.multiply = since(t1);
      report_phases(Names<T>::name, Names<T>::lower, m, n, k, "block-cyclic", direct.name(), ph, seconds(), verbose,
                    comm, root);
      return;
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
