// A ScaLAPACK program that knows nothing of distmm: it calls p?gemm_ the way real codes do
// (descinit_ descriptors, BLACS grids, sub-matrices) and checks every local element of C
// against a reference computed from the global matrices, which every rank generates. Run it
// plain (ScaLAPACK answers) and with LD_PRELOAD=libdistmm_scalapack.so (distmm answers), or
// linked with distmm::scalapack.
//   pxgemm_driver                     all cases that fit the rank count; exit 1 on any failure
//   pxgemm_driver random SEED COUNT   COUNT seeded random cases that fit the rank count: every
//                                     type, grid, transpose, blocking, source and offset, half
//                                     of them with operands that line up (the in-place paths),
//                                     some k-dominant, beta 0 with NaN in C
//   pxgemm_driver bench M N K NB PR PC REPS [WARMUP]   time pdgemm_ (f64, alpha 1, beta 0):
//                                     WARMUP untimed calls (default 1), then REPS timed ones
#include <mpi.h>

#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

extern "C" {
void Cblacs_pinfo(int* me, int* np);
void Cblacs_get(int ctxt, int what, int* val);
void Cblacs_gridinit(int* ctxt, const char* order, int nprow, int npcol);
void Cblacs_gridinfo(int ctxt, int* nprow, int* npcol, int* myrow, int* mycol);
void Cblacs_gridexit(int ctxt);
int numroc_(const int* n, const int* nb, const int* iproc, const int* isrc, const int* nprocs);
void descinit_(int* desc, const int* m, const int* n, const int* mb, const int* nb,
               const int* rsrc, const int* csrc, const int* ctxt, const int* lld, int* info);
#define PGEMM(NAME, T)                                                                        \
  void NAME(const char*, const char*, const int*, const int*, const int*, const T*, const T*, \
            const int*, const int*, const int*, const T*, const int*, const int*, const int*, \
            const T*, T*, const int*, const int*, const int*, std::size_t, std::size_t);
PGEMM(psgemm_, float)
PGEMM(pdgemm_, double)
PGEMM(pcgemm_, std::complex<float>)
PGEMM(pzgemm_, std::complex<double>)
#undef PGEMM
}

namespace {

using cd = std::complex<double>;

template <class T> constexpr bool is_complex = !std::is_floating_point_v<T>;
template <class T> using real_t = decltype(std::abs(T{}));

template <class T>
void pgemm(const char* ta, const char* tb, const int* m, const int* n, const int* k, const T* al,
           const T* a, const int* ia, const int* ja, const int* da, const T* b, const int* ib,
           const int* jb, const int* db, const T* be, T* c, const int* ic, const int* jc,
           const int* dc) {
  if constexpr (std::is_same_v<T, float>) psgemm_(ta, tb, m, n, k, al, a, ia, ja, da, b, ib, jb, db, be, c, ic, jc, dc, 1, 1);
  else if constexpr (std::is_same_v<T, double>) pdgemm_(ta, tb, m, n, k, al, a, ia, ja, da, b, ib, jb, db, be, c, ic, jc, dc, 1, 1);
  else if constexpr (std::is_same_v<T, std::complex<float>>) pcgemm_(ta, tb, m, n, k, al, a, ia, ja, da, b, ib, jb, db, be, c, ic, jc, dc, 1, 1);
  else pzgemm_(ta, tb, m, n, k, al, a, ia, ja, da, b, ib, jb, db, be, c, ic, jc, dc, 1, 1);
}

// A global matrix's element: small exact values, different per matrix (seed).
template <class T>
T value(int seed, int i, int j) {
  double re = double((i * 7 + j * 13 + seed * 31) % 17 - 8) / 8.0;
  double im = double((i * 5 + j * 3 + seed * 11) % 13 - 6) / 6.0;
  if constexpr (is_complex<T>) return T(re, im);
  else return T(re + 0 * im);
}

struct Dist {  // one matrix: global M x N, mb x nb blocks from (rsrc, csrc), LLD padding
  int M, N, mb, nb, rsrc = 0, csrc = 0, pad = 0;
};

struct Case {
  std::string name;
  char type;  // s d c z
  int nprow, npcol;
  char ta, tb;
  int m, n, k;
  cd alpha, beta;
  Dist A, B, C;
  int ia = 1, ja = 1, ib = 1, jb = 1, ic = 1, jc = 1;
  bool nan_c = false;
};

int g_of(int l, int nb, int p, int src, int np) {  // local index to global (0-based)
  return ((l / nb) * np + (p - src + np) % np) * nb + l % nb;
}

struct Local {
  int desc[9];
  int rows, cols, lld;
};

Local make_local(const Dist& d, int ctxt, int myrow, int mycol, int nprow, int npcol) {
  Local l;
  l.rows = numroc_(&d.M, &d.mb, &myrow, &d.rsrc, &nprow);
  l.cols = numroc_(&d.N, &d.nb, &mycol, &d.csrc, &npcol);
  l.lld = std::max(1, l.rows) + d.pad;
  int info = 0;
  descinit_(l.desc, &d.M, &d.N, &d.mb, &d.nb, &d.rsrc, &d.csrc, &ctxt, &l.lld, &info);
  if (info != 0) std::fprintf(stderr, "descinit_ info %d\n", info);
  return l;
}

template <class T>
int run_case(const Case& cs, int ctxt, int myrow, int mycol) {
  const int nprow = cs.nprow, npcol = cs.npcol;
  Local la = make_local(cs.A, ctxt, myrow, mycol, nprow, npcol);
  Local lb = make_local(cs.B, ctxt, myrow, mycol, nprow, npcol);
  Local lc = make_local(cs.C, ctxt, myrow, mycol, nprow, npcol);
  auto fill = [&](const Dist& d, const Local& l, int seed) {
    std::vector<T> v(std::size_t(l.lld) * std::max(1, l.cols), T(-99));
    for (int j = 0; j < l.cols; ++j)
      for (int i = 0; i < l.rows; ++i)
        v[i + std::size_t(j) * l.lld] =
            value<T>(seed, g_of(i, d.mb, myrow, d.rsrc, nprow), g_of(j, d.nb, mycol, d.csrc, npcol));
    return v;
  };
  auto A = fill(cs.A, la, 1), B = fill(cs.B, lb, 2), C = fill(cs.C, lc, 3);
  if (cs.nan_c)
    for (auto& x : C) x = T(std::nan(""));
  const std::vector<T> C0 = C;
  T alpha, beta;
  if constexpr (is_complex<T>) alpha = T(cs.alpha), beta = T(cs.beta);
  else alpha = T(cs.alpha.real()), beta = T(cs.beta.real());
  pgemm<T>(&cs.ta, &cs.tb, &cs.m, &cs.n, &cs.k, &alpha, A.data(), &cs.ia, &cs.ja, la.desc,
           B.data(), &cs.ib, &cs.jb, lb.desc, &beta, C.data(), &cs.ic, &cs.jc, lc.desc);
  // op(sub(A))(i, l) and op(sub(B))(l, j) from the global generators (0-based in the sub-matrix).
  auto opA = [&](int i, int l) {
    cd v = cs.ta == 'N' ? cd(value<T>(1, cs.ia - 1 + i, cs.ja - 1 + l)) : cd(value<T>(1, cs.ia - 1 + l, cs.ja - 1 + i));
    return cs.ta == 'C' ? std::conj(v) : v;
  };
  auto opB = [&](int l, int j) {
    cd v = cs.tb == 'N' ? cd(value<T>(2, cs.ib - 1 + l, cs.jb - 1 + j)) : cd(value<T>(2, cs.ib - 1 + j, cs.jb - 1 + l));
    return cs.tb == 'C' ? std::conj(v) : v;
  };
  const double eps = std::is_same_v<real_t<T>, float> ? 6e-8 : 1.2e-16;
  const cd al = cd(alpha), be = cd(beta);
  int bad = 0;
  double worst = 0;
  for (int j = 0; j < lc.cols; ++j)
    for (int i = 0; i < lc.rows; ++i) {
      const std::size_t at = i + std::size_t(j) * lc.lld;
      const int gi = g_of(i, cs.C.mb, myrow, cs.C.rsrc, nprow) - (cs.ic - 1);
      const int gj = g_of(j, cs.C.nb, mycol, cs.C.csrc, npcol) - (cs.jc - 1);
      const bool inside = gi >= 0 && gi < cs.m && gj >= 0 && gj < cs.n;
      const cd got = cd(C[at]);
      if (!inside) {  // untouched, NaN included
        const cd was = cd(C0[at]);
        const bool same = (std::isnan(was.real()) && std::isnan(got.real())) || got == was;
        if (!same) ++bad;
        continue;
      }
      cd ref = 0;
      double mag = 0;
      for (int l = 0; l < cs.k; ++l) {
        const cd p = opA(gi, l) * opB(l, gj);
        ref += p, mag += std::abs(p);
      }
      ref *= al, mag *= std::abs(al);
      if (be != cd(0)) {
        ref += be * cd(C0[at]);
        mag += std::abs(be * cd(C0[at]));
      }
      const double err = std::abs(got - ref);
      const double tol = 8 * (cs.k + 2) * eps * mag + 1e-30;
      if (!(err <= tol)) ++bad;  // NaN fails too
      if (!(err <= worst)) worst = err;
    }
  // Padding rows between local rows and LLD untouched.
  for (int j = 0; j < lc.cols; ++j)
    for (int i = lc.rows; i < lc.lld; ++i) {
      const std::size_t at = i + std::size_t(j) * lc.lld;
      const cd got = cd(C[at]), was = cd(C0[at]);
      if (!((std::isnan(was.real()) && std::isnan(got.real())) || got == was)) ++bad;
    }
  if (bad) std::fprintf(stderr, "  rank (%d,%d): %d wrong elements, worst error %.3g\n", myrow, mycol, bad, worst);
  return bad;
}

std::vector<Case> cases() {
  std::vector<Case> v;
  auto sq = [](int M, int N, int mb, int nb) { return Dist{M, N, mb, nb}; };
  // name, type, grid, ta, tb, m, n, k, alpha, beta, A, B, C
  v.push_back({"square 2x2", 'd', 2, 2, 'N', 'N', 37, 37, 37, 1.5, 0.5, sq(37, 37, 4, 4), sq(37, 37, 4, 4), sq(37, 37, 4, 4)});
  v.push_back({"tall-skinny NN 2x2", 'd', 2, 2, 'N', 'N', 300, 5, 7, 1, 1, sq(300, 7, 32, 4), sq(7, 5, 4, 4), sq(300, 5, 32, 4)});
  v.push_back({"tall-skinny TN (Gram) 2x2", 'd', 2, 2, 'T', 'N', 6, 5, 400, 1, 0, sq(400, 6, 16, 2), sq(400, 5, 16, 2), sq(6, 5, 2, 2)});
  v.push_back({"k = 0, beta 2", 'd', 2, 2, 'N', 'N', 20, 21, 0, 1, 2, sq(20, 1, 4, 4), sq(1, 21, 4, 4), sq(20, 21, 4, 4)});
  v.push_back({"one rank 1x1", 'd', 1, 1, 'N', 'T', 20, 22, 24, -1, 1, sq(20, 24, 8, 8), sq(22, 24, 5, 5), sq(20, 22, 8, 8)});
  v.push_back({"1x4 grid", 'd', 1, 4, 'N', 'N', 30, 31, 29, 1, 0.25, sq(30, 29, 3, 3), sq(29, 31, 3, 3), sq(30, 31, 3, 3)});
  v.push_back({"4x1 grid TT", 'd', 4, 1, 'T', 'T', 26, 19, 23, 2, -1, sq(23, 26, 5, 3), sq(19, 23, 2, 7), sq(26, 19, 6, 6)});
  v.push_back({"1x3 grid (rank 3 idle)", 'd', 1, 3, 'N', 'N', 17, 40, 9, 1, 1, sq(17, 9, 4, 4), sq(9, 40, 4, 4), sq(17, 40, 4, 4)});
  {
    Case c{"RSRC/CSRC != 0", 'd', 2, 2, 'N', 'N', 33, 27, 25, 1, 1, sq(33, 25, 4, 3), sq(25, 27, 5, 2), sq(33, 27, 3, 5)};
    c.A.rsrc = 1, c.A.csrc = 1, c.B.rsrc = 1, c.C.csrc = 1;
    v.push_back(c);
  }
  {
    Case c{"beta 0 with NaN in C", 'd', 2, 2, 'N', 'N', 25, 26, 27, 1, 0, sq(40, 27, 4, 4), sq(27, 26, 4, 4), sq(40, 40, 4, 4)};
    c.nan_c = true, c.ic = 6, c.jc = 3;
    v.push_back(c);
  }
  {
    Case c{"IA/JA offsets, LLD padding", 'd', 2, 2, 'T', 'N', 21, 18, 15, 1, 1, sq(30, 40, 4, 6), sq(35, 30, 7, 3), sq(40, 40, 5, 5)};
    c.ia = 3, c.ja = 5, c.ib = 2, c.jb = 7, c.ic = 4, c.jc = 6;
    c.A.pad = 3, c.B.pad = 1, c.C.pad = 5;
    v.push_back(c);
  }
  {
    Case c{"alpha 0, beta 0.5", 'd', 2, 2, 'N', 'N', 10, 10, 10, 0, 0.5, sq(10, 10, 3, 3), sq(10, 10, 3, 3), sq(10, 10, 3, 3)};
    v.push_back(c);
  }
  v.push_back({"m = 0", 'd', 2, 2, 'N', 'N', 0, 10, 10, 1, 0, sq(1, 10, 3, 3), sq(10, 10, 3, 3), sq(1, 10, 3, 3)});
  v.push_back({"f32 TN 2x2", 's', 2, 2, 'T', 'N', 29, 31, 33, 1, 1, sq(33, 29, 4, 4), sq(33, 31, 4, 4), sq(29, 31, 4, 4)});
  {
    Case c{"c64 CT 2x2 offsets", 'c', 2, 2, 'C', 'T', 19, 23, 21, cd(1, -2), cd(0.5, 1), sq(30, 30, 4, 3), sq(30, 30, 2, 5), sq(30, 30, 3, 3)};
    c.ia = 2, c.ja = 3, c.ib = 4, c.jb = 5, c.ic = 6, c.jc = 7;
    v.push_back(c);
  }
  {
    Case c{"c128 NC 1x4 RSRC", 'z', 1, 4, 'N', 'C', 24, 20, 22, cd(0.5, 1), cd(0, 0), sq(24, 22, 4, 4), sq(20, 22, 3, 3), sq(24, 20, 5, 2)};
    c.A.csrc = 2, c.C.csrc = 3, c.nan_c = true;
    v.push_back(c);
  }
  v.push_back({"c128 CC 2x2", 'z', 2, 2, 'C', 'C', 13, 14, 15, cd(1, 1), cd(1, -1), sq(15, 13, 2, 2), sq(14, 15, 3, 3), sq(13, 14, 4, 4)});
  // Operands whose blockings line up (N x N): distmm runs SUMMA on the block-cyclic layout
  // itself (wide panels), nothing redistributed.
  v.push_back({"aligned NN 2x2 (in place)", 'd', 2, 2, 'N', 'N', 70, 65, 90, 1.5, 0.5, sq(70, 90, 16, 16), sq(90, 65, 16, 16), sq(70, 65, 16, 16)});
  {
    Case c{"aligned NN offsets, beta 0, NaN C", 'd', 2, 2, 'N', 'N', 60, 50, 80, -1, 0, sq(100, 120, 16, 16), sq(130, 90, 16, 16), sq(100, 90, 16, 16)};
    c.ia = c.ic = 17, c.ja = c.ib = 33, c.jb = c.jc = 2;
    c.A.pad = 2, c.B.pad = 3, c.C.pad = 1, c.nan_c = true;
    v.push_back(c);
  }
  {
    Case c{"aligned c128 NN RSRC/CSRC != 0", 'z', 2, 2, 'N', 'N', 45, 51, 66, cd(0.5, -1), cd(1, 2), sq(45, 66, 8, 12), sq(66, 51, 12, 8), sq(45, 51, 8, 8)};
    c.A.rsrc = c.C.rsrc = 1, c.A.csrc = c.B.rsrc = 1, c.B.csrc = c.C.csrc = 1;
    v.push_back(c);
  }
  v.push_back({"aligned f32 NN 1x4 (k over columns)", 's', 1, 4, 'N', 'N', 40, 150, 256, 1, 1, sq(40, 256, 32, 32), sq(256, 150, 32, 32), sq(40, 150, 32, 32)});
  v.push_back({"aligned NN 1x1", 'd', 1, 1, 'N', 'N', 33, 35, 37, 2, 1, sq(33, 37, 8, 8), sq(37, 35, 8, 8), sq(33, 35, 8, 8)});
  // k-dominant aligned calls: the k-split on the block-cyclic layout (fewer words than SUMMA on
  // 1 x P and P x 1 grids; every aligned case runs it under DISTMM_SCALAPACK_DIRECT=ksplit).
  v.push_back({"aligned k-dominant 1x4", 'd', 1, 4, 'N', 'N', 40, 12, 700, 1.5, 0.5, sq(40, 700, 8, 48), sq(700, 12, 48, 3), sq(40, 12, 8, 3)});
  {
    Case c{"aligned k-dominant c128 4x1 offsets, beta 0, NaN C", 'z', 4, 1, 'N', 'N', 9, 30, 641, cd(1, -0.5), 0, sq(20, 660, 3, 40), sq(700, 40, 40, 5), sq(25, 45, 3, 5)};
    c.ia = c.ic = 4, c.ja = c.ib = 6, c.jb = c.jc = 2;
    c.A.rsrc = c.C.rsrc = 2, c.B.rsrc = 1, c.A.csrc = 0;
    c.A.pad = 2, c.C.pad = 3, c.nan_c = true;
    v.push_back(c);
  }
  v.push_back({"aligned k-dominant f32 1x3 prime", 's', 1, 3, 'N', 'N', 31, 7, 997, 1, 1, sq(31, 997, 5, 37), sq(997, 7, 37, 2), sq(31, 7, 5, 2)});
  v.push_back({"aligned k-dominant 4x4", 'd', 4, 4, 'N', 'N', 50, 44, 2000, 1, 1, sq(50, 2000, 8, 32), sq(2000, 44, 32, 4), sq(50, 44, 8, 4)});
  {
    Case c{"aligned k-dominant c64 4x4 shifted sources, offsets", 'c', 4, 4, 'N', 'N', 37, 29, 1531, cd(0.5, 2), cd(-1, 0.5), sq(45, 1600, 5, 24), sq(1600, 35, 24, 3), sq(45, 35, 5, 3)};
    c.A.rsrc = c.C.rsrc = 3, c.A.csrc = 1, c.B.rsrc = 2, c.B.csrc = c.C.csrc = 1;
    c.ia = c.ic = 6, c.ja = c.ib = 30, c.jb = c.jc = 4, c.B.pad = 1;
    v.push_back(c);
  }
  // Pieces of C above MPI's eager limit (the k-split's receive window and slot reuse then wait
  // on posted receives), a 2 x 3 grid, and ranks without a share of k.
  v.push_back({"aligned 2x2 pieces of 24 KiB", 'd', 2, 2, 'N', 'N', 128, 96, 2048, 1, 0.5, sq(128, 2048, 32, 64), sq(2048, 96, 64, 24), sq(128, 96, 32, 24)});
  v.push_back({"aligned k-dominant 4x4 large pieces", 'd', 4, 4, 'N', 'N', 256, 200, 4096, 1, 0, sq(256, 4096, 32, 64), sq(4096, 200, 64, 25), sq(256, 200, 32, 25)});
  v.push_back({"aligned c128 2x3", 'z', 2, 3, 'N', 'N', 30, 33, 900, cd(1, 1), cd(0.5, 0), sq(30, 900, 4, 32), sq(900, 33, 32, 5), sq(30, 33, 4, 5)});
  v.push_back({"aligned 4x2 tiny k (ranks without a share of k)", 'd', 4, 2, 'N', 'N', 20, 18, 5, 1, 1, sq(20, 5, 3, 4), sq(5, 18, 4, 2), sq(20, 18, 3, 2)});
  v.push_back({"larger 2x2 (300^3)", 'd', 2, 2, 'N', 'T', 300, 300, 300, 1, 1, sq(300, 300, 64, 64), sq(300, 300, 64, 64), sq(300, 300, 64, 64)});
  return v;
}

// Seeded random cases for np ranks (the same on every rank).
std::vector<Case> random_cases(unsigned seed, int count, int np) {
  std::mt19937 g(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(g); };
  std::vector<Case> v;
  for (int i = 0; i < count; ++i) {
    Case c;
    c.type = "sdcz"[pick(0, 3)];
    do c.nprow = pick(1, 4), c.npcol = pick(1, 4); while (c.nprow * c.npcol > np);
    const bool aligned = pick(0, 1) == 1;
    c.ta = aligned ? 'N' : "NTC"[pick(0, 2)];
    c.tb = aligned ? 'N' : "NTC"[pick(0, 2)];
    if (c.type == 's' || c.type == 'd') {
      if (c.ta == 'C') c.ta = 'T';
      if (c.tb == 'C') c.tb = 'T';
    }
    c.m = pick(0, 9) == 0 ? pick(0, 1) : pick(1, 45);
    c.n = pick(0, 9) == 0 ? pick(0, 1) : pick(1, 45);
    c.k = pick(0, 9) == 0 ? 0 : pick(0, 3) == 0 ? pick(200, 700) : pick(1, 45);  // k-dominant
    const double al[] = {1, -1, 0.5, 2, 0}, be[] = {0, 1, -0.5, 2};
    c.alpha = cd(al[pick(0, 4)], c.type == 'c' || c.type == 'z' ? pick(-1, 1) : 0);
    c.beta = cd(be[pick(0, 3)], c.type == 'c' || c.type == 'z' ? pick(-1, 1) : 0);
    c.nan_c = c.beta == cd(0);
    c.ia = pick(1, 5), c.ja = pick(1, 5), c.ib = pick(1, 5), c.jb = pick(1, 5);
    c.ic = pick(1, 5), c.jc = pick(1, 5);
    auto blk = [&] { return pick(0, 2) == 0 ? pick(1, 3) : pick(4, 40); };
    const int am = c.ta == 'N' ? c.m : c.k, an = c.ta == 'N' ? c.k : c.m;
    const int bm = c.tb == 'N' ? c.k : c.n, bn = c.tb == 'N' ? c.n : c.k;
    auto dist = [&](int rows, int cols, int i0, int j0) {
      Dist d{rows + i0 - 1 + pick(0, 4), cols + j0 - 1 + pick(0, 4), blk(), blk(),
             pick(0, c.nprow - 1), pick(0, c.npcol - 1), pick(0, 3)};
      d.M = std::max(d.M, 1), d.N = std::max(d.N, 1);
      return d;
    };
    c.A = dist(am, an, c.ia, c.ja), c.B = dist(bm, bn, c.ib, c.jb), c.C = dist(c.m, c.n, c.ic, c.jc);
    if (aligned) {  // one blocking: A's rows as C's, B's columns as C's, A's columns as B's rows
      c.ia = c.ic, c.A.mb = c.C.mb, c.A.rsrc = c.C.rsrc;
      c.jb = c.jc, c.B.nb = c.C.nb, c.B.csrc = c.C.csrc;
      c.ib = c.ja, c.B.mb = c.A.nb;
      c.A.M = std::max(c.A.M, c.ia - 1 + c.m), c.B.N = std::max(c.B.N, c.jb - 1 + c.n);
      c.B.M = std::max(c.B.M, c.ib - 1 + c.k);
    }
    char name[96];
    std::snprintf(name, sizeof name, "random %d: %c %dx%d %c%c %dx%dx%d%s", i, c.type, c.nprow,
                  c.npcol, c.ta, c.tb, c.m, c.n, c.k, aligned ? " aligned" : "");
    c.name = name;
    v.push_back(c);
  }
  return v;
}

int bench(int argc, char** argv) {
  if (argc < 9) return 2;
  int m = std::atoi(argv[2]), n = std::atoi(argv[3]), k = std::atoi(argv[4]), nb = std::atoi(argv[5]);
  int pr = std::atoi(argv[6]), pc = std::atoi(argv[7]), reps = std::atoi(argv[8]);
  const int warmup = argc > 9 ? std::atoi(argv[9]) : 1;
  int me, np, ctxt, nprow, npcol, myrow, mycol;
  Cblacs_pinfo(&me, &np);
  Cblacs_get(-1, 0, &ctxt);
  Cblacs_gridinit(&ctxt, "Row", pr, pc);
  Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);
  if (myrow >= 0) {
    Local la = make_local({m, k, nb, nb}, ctxt, myrow, mycol, pr, pc);
    Local lb = make_local({k, n, nb, nb}, ctxt, myrow, mycol, pr, pc);
    Local lc = make_local({m, n, nb, nb}, ctxt, myrow, mycol, pr, pc);
    std::vector<double> A(std::size_t(la.lld) * std::max(1, la.cols), 1.0),
        B(std::size_t(lb.lld) * std::max(1, lb.cols), 1.0), C(std::size_t(lc.lld) * std::max(1, lc.cols), 0.0);
    for (std::size_t i = 0; i < A.size(); ++i) A[i] = double(i % 7) / 7.0;
    for (std::size_t i = 0; i < B.size(); ++i) B[i] = double(i % 5) / 5.0;
    const double one = 1, zero = 0;
    const int i1 = 1;
    for (int r = 0; r < warmup + reps; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t = MPI_Wtime();
      pdgemm_("N", "N", &m, &n, &k, &one, A.data(), &i1, &i1, la.desc, B.data(), &i1, &i1,
              lb.desc, &zero, C.data(), &i1, &i1, lc.desc, 1, 1);
      MPI_Barrier(MPI_COMM_WORLD);
      t = MPI_Wtime() - t;
      if (me == 0 && r >= warmup)
        std::printf("pdgemm %d x %d x %d nb %d grid %dx%d call %d: %.6f s, %.1f GFLOP/s\n", m, n,
                    k, nb, pr, pc, r + 1, t, 2.0 * m * n * double(k) / t / 1e9);
    }
    Cblacs_gridexit(ctxt);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  if (argc > 1 && std::strcmp(argv[1], "bench") == 0) {
    rc = bench(argc, argv);
    MPI_Finalize();
    return rc;
  }
  int me, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  int failed = 0, ran = 0;
  const bool random = argc > 3 && std::strcmp(argv[1], "random") == 0;
  const auto all = random ? random_cases(unsigned(std::atoi(argv[2])), std::atoi(argv[3]), np) : cases();
  for (const Case& cs : all) {
    if (cs.nprow * cs.npcol > np) continue;
    int ctxt;
    Cblacs_get(-1, 0, &ctxt);
    Cblacs_gridinit(&ctxt, "Row", cs.nprow, cs.npcol);
    int nprow, npcol, myrow, mycol;
    Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);
    int bad = 0;
    if (myrow >= 0 && mycol >= 0) {
      switch (cs.type) {
        case 's': bad = run_case<float>(cs, ctxt, myrow, mycol); break;
        case 'd': bad = run_case<double>(cs, ctxt, myrow, mycol); break;
        case 'c': bad = run_case<std::complex<float>>(cs, ctxt, myrow, mycol); break;
        default: bad = run_case<std::complex<double>>(cs, ctxt, myrow, mycol); break;
      }
      Cblacs_gridexit(ctxt);
    }
    int total = 0;
    MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    ++ran;
    if (me == 0 && (!random || total)) std::printf("%-32s %s\n", cs.name.c_str(), total ? "FAIL" : "ok");
    if (total) ++failed;
  }
  if (me == 0) std::printf("%d cases, %d failed\n", ran, failed);
  MPI_Finalize();
  return failed ? 1 : 0;
}
