// `--algo scalapack`: ScaLAPACK's P?GEMM (PSGEMM, PDGEMM, PCGEMM, PZGEMM) on the same ranks and problem, as the baseline
// that benchmarks and users compare with in one run. Block-cyclic nb x nb layout on a pr x pc
// BLACS grid (the same grid shape SUMMA would choose); the library's own BLAS does the local work.
#include <mpi.h>

#include "scalapack.hpp"

#include "algorithms.hpp"
#include "../runtime/grid.hpp"

extern "C" {
int Csys2blacs_handle(MPI_Comm comm);
void Cblacs_gridinit(int* ctxt, const char* order, int nprow, int npcol);
void Cblacs_gridinfo(int ctxt, int* nprow, int* npcol, int* myrow, int* mycol);
void Cblacs_gridexit(int ctxt);
void Cfree_blacs_system_handle(int handle);
int numroc_(const int* n, const int* nb, const int* iproc, const int* isrcproc, const int* nprocs);
void descinit_(int* desc, const int* m, const int* n, const int* mb, const int* nb,
               const int* irsrc, const int* icsrc, const int* ictxt, const int* lld, int* info);
// P?GEMM, one per type of the dtype list (Fortran ABI: everything by reference; the hidden
// lengths of the two character arguments are 1 and trail the list, which callers of a C
// prototype may omit on the platforms ScaLAPACK supports).
#define DISTMM_PGEMM(NAME, T)                                                                 \
  void NAME(const char* ta, const char* tb, const int* m, const int* n, const int* k,         \
            const T* alpha, const T* a, const int* ia, const int* ja, const int* desca,       \
            const T* b, const int* ib, const int* jb, const int* descb, const T* beta, T* c, \
            const int* ic, const int* jc, const int* descc);
DISTMM_PGEMM(psgemm_, float)
DISTMM_PGEMM(pdgemm_, double)
DISTMM_PGEMM(pcgemm_, std::complex<float>)
DISTMM_PGEMM(pzgemm_, std::complex<double>)
#undef DISTMM_PGEMM
}

namespace distmm {
namespace {

// The P?GEMM of T (s, d, c, z: DtypeTraits<T>::blas_letter).
template <class T>
constexpr auto pgemm() {
  if constexpr (std::is_same_v<T, float>) return psgemm_;
  else if constexpr (std::is_same_v<T, double>) return pdgemm_;
  else if constexpr (std::is_same_v<T, std::complex<float>>) return pcgemm_;
  else return pzgemm_;
}

int to_int(index_t v) {
  if (v > INT_MAX) throw UsageError("scalapack takes sizes below 2^31: use --algo summa");
  return static_cast<int>(v);
}


}  // namespace

BlacsGrid::BlacsGrid(const Comm& comm, int nprow, int npcol) {
  handle_ = Csys2blacs_handle(comm.get());
  ctxt_ = handle_;
  Cblacs_gridinit(&ctxt_, "Row", nprow, npcol);
  int npr, npc;
  Cblacs_gridinfo(ctxt_, &npr, &npc, &row_, &col_);
}

BlacsGrid::~BlacsGrid() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  Cblacs_gridexit(ctxt_);
  Cfree_blacs_system_handle(handle_);
}

ScalapackDesc scalapack_desc(const BlacsGrid& grid, index_t rows, index_t cols, index_t mb, index_t nb, index_t lld) {
  int m = to_int(rows), n = to_int(cols), b_rows = to_int(mb), b_cols = to_int(nb), zero = 0, info = 0,
      ctxt = grid.ctxt(), ld = std::max(1, to_int(lld));
  ScalapackDesc d{};
  descinit_(d.data(), &m, &n, &b_rows, &b_cols, &zero, &zero, &ctxt, &ld, &info);
  return d;
}

template <class T>
void scalapack_gemm(T alpha, const T* A, const ScalapackDesc& desc_a, const T* B, const ScalapackDesc& desc_b,
                    T beta, T* C, const ScalapackDesc& desc_c) {
  const int m = desc_c[2], n = desc_c[3], k = desc_a[3], one = 1;
  // ScaLAPACK reads nothing from empty local arrays but wants valid pointers.
  T dummy[1] = {T(0)};
  pgemm<T>()("N", "N", &m, &n, &k, &alpha, A ? A : dummy, &one, &one, desc_a.data(), B ? B : dummy, &one, &one,
             desc_b.data(), &beta, C ? C : dummy, &one, &one, desc_c.data());
}
#define DISTMM_SCALAPACK_GEMM(T)                                                                       \
  template void scalapack_gemm<T>(T, const T*, const ScalapackDesc&, const T*, const ScalapackDesc&, T, T*, \
                                  const ScalapackDesc&);
DISTMM_FOR_EACH_TYPE(DISTMM_SCALAPACK_GEMM)
#undef DISTMM_SCALAPACK_GEMM

namespace {

class Scalapack final : public AlgorithmBase<Scalapack> {
 public:
  Scalapack(const Comm& world, GemmShape s, index_t nb, int pr, int pc)
      : s_(s), nb_(nb), pr_(pr), pc_(pc), grid_(world, pr, pc) {
    auto piece = [&](index_t rows, index_t cols) {
      Piece p;
      p.row_runs = Piece::cyclic_runs(rows, nb_, grid_.row(), pr_);
      p.col_runs = Piece::cyclic_runs(cols, nb_, grid_.col(), pc_);
      return p;  // may hold rows but no columns: PDGEMM's LLD still counts the local rows
    };
    piece_a_ = piece(s.m, s.k);
    piece_b_ = piece(s.k, s.n);
    piece_c_ = piece(s.m, s.n);
  }

  std::string name() const override { return "scalapack"; }
  std::string layout() const override {
    return std::to_string(pr_) + "x" + std::to_string(pc_) + " BLACS grid, nb " +
           std::to_string(nb_);
  }
  bool uses_engine() const override { return false; }
  bool counts_words() const override { return false; }

  std::size_t peak_bytes(Dtype dt, const Engine&) const override {
    index_t mi = (s_.m + pr_ - 1) / pr_ + nb_, nj = (s_.n + pc_ - 1) / pc_ + nb_;
    index_t ka = (s_.k + pc_ - 1) / pc_ + nb_, kb = (s_.k + pr_ - 1) / pr_ + nb_;
    // local A, B, C plus PDGEMM's panel workspace (about two panels each way)
    index_t words = mi * ka + kb * nj + mi * nj + 2 * nb_ * (mi + nj);
    return static_cast<std::size_t>(words) * size_of(dt);
  }

  // PDGEMM's outer-product scheme moves, like SUMMA, every A panel along process rows and
  // every B panel along process columns.
  CommEstimate analytic() const override {
    return EstimateAccumulator::over(pr_ * pc_, [&](int r, double& words, double& msgs) {
      const int i = r / pc_, j = r % pc_;
      const double mi = double(Piece::total(Piece::cyclic_runs(s_.m, nb_, i, pr_)));
      const double nj = double(Piece::total(Piece::cyclic_runs(s_.n, nb_, j, pc_)));
      const double ka = double(Piece::total(Piece::cyclic_runs(s_.k, nb_, j, pc_)));
      const double kb = double(Piece::total(Piece::cyclic_runs(s_.k, nb_, i, pr_)));
      const double panels = double((s_.k + nb_ - 1) / nb_);
      words = mi * (s_.k - ka) + nj * (s_.k - kb), msgs = (pc_ > 1 ? panels : 0) + (pr_ > 1 ? panels : 0);
      return 2 * mi * nj * double(s_.k);
    });
  }

  template <class T>
  void run(Engine&, T alpha, MatrixView<const T> A, MatrixView<const T> B, T beta, MatrixView<T> C) {
    const ScalapackDesc da = scalapack_desc(grid_, s_.m, s_.k, nb_, nb_, A.ld),
                        db = scalapack_desc(grid_, s_.k, s_.n, nb_, nb_, B.ld),
                        dc = scalapack_desc(grid_, s_.m, s_.n, nb_, nb_, C.ld);
    scalapack_gemm<T>(alpha, A.size() ? A.data : nullptr, da, B.size() ? B.data : nullptr, db, beta,
                      C.size() ? C.data : nullptr, dc);
  }

 private:
  GemmShape s_;
  index_t nb_;
  int pr_, pc_;
  BlacsGrid grid_;
};

}  // namespace

std::unique_ptr<DistAlgorithm> make_scalapack(const Comm& world, GemmShape s, const AlgoOptions& o) {
  const int P = world.size();
  auto [pr, pc] = grid_2d_for(P, s.m, s.n, o.grid_rows);
  if (o.scalapack_nb < 1) throw UsageError("--nb must be at least 1");
  return std::make_unique<Scalapack>(world, s, o.scalapack_nb, pr, pc);
}

}  // namespace distmm
