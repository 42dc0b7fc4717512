// Scatter and gather over every algorithm's layout: a round trip gives back the whole matrix,
// and each rank's piece holds exactly the generator's values (the layouts tile the matrix).
#include <gtest/gtest.h>

#include "mpi/algorithms/algorithm.hpp"
#include "mpi/runtime/distribution.hpp"

using namespace distmm;

TEST(Distribution, ScatterGatherRoundTripOnEveryLayout) {
  Comm world = Comm::world();
  for (Algorithm algo : {Algorithm::summa, Algorithm::cannon, Algorithm::dns, Algorithm::scalapack,
                         Algorithm::caps}) {
    std::unique_ptr<DistAlgorithm> a;
    try {
      AlgoOptions o;
      o.scalapack_nb = 3;
      a = make_algorithm(algo, world, {29, 23, 31}, o);
    } catch (const UsageError&) {
      continue;  // this rank count does not fit the algorithm
    }
    for (const Piece* p : {&a->piece_a(), &a->piece_c()}) {
      const index_t rows = 29, cols = p == &a->piece_a() ? 31 : 23;
      Matrix<double> whole;
      if (world.rank() == 0) {
        whole.resize(rows, cols);
        fill_random_block(whole.view(), 0, 0, 3, Stream::A, Fill::uniform);
      }
      DistMatrix<double> M(rows, cols, *p), R(rows, cols, *p);
      scatter_from_root(whole, M, world);
      fill_random(R, 3, Stream::A, Fill::uniform);
      for (index_t t = 0; t < M.local.size(); ++t) ASSERT_EQ(M.local.data()[t], R.local.data()[t]) << to_string(algo);
      Matrix<double> back = gather_to_root(M, world);
      if (world.rank() == 0)
        for (index_t t = 0; t < back.size(); ++t) ASSERT_EQ(back.data()[t], whole.data()[t]) << to_string(algo);
    }
  }
}
