// Multiplies with SUMMA through the installed library and checks one element exactly.
#include <distmm/mpi/algorithm.hpp>
#include <distmm/mpi/distribution.hpp>
#include <cstdio>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  using namespace distmm;
  Comm world = Comm::world();
  auto algo = make_algorithm("summa", world, {5, 4, 3}, {});
  auto engine = make_engine("blas", {});
  DistMatrix<double> A(5, 3, algo->piece_a()), B(3, 4, algo->piece_b()), C(5, 4, algo->piece_c());
  A.local.fill(1.0);
  B.local.fill(2.0);
  algo->multiply(*engine, 1.0, A.local, B.local, 0.0, C.local);
  Matrix<double> c = gather_to_root(C, world);
  int ok = world.rank() != 0 || (c(4, 3) == 6.0 && c(0, 0) == 6.0);
  if (world.rank() == 0) std::printf("consumer: C(4,3) = %g %s\n", c(4, 3), ok ? "ok" : "WRONG");
  MPI_Finalize();
  return ok ? 0 : 1;
}
