// A distributed matrix: the global shape, this rank's piece, and the local storage.
#pragma once
#include <cstdint>

#include "../../src/core/matrix.hpp"
#include "../../src/core/random.hpp"
#include "comm.hpp"
#include "partition.hpp"

namespace distmm {

template <class T>
struct DistMatrix {
  index_t rows = 0, cols = 0;  // global
  Piece piece;
  Matrix<T> local;             // piece.rows() x piece.cols(), column-major

  DistMatrix() = default;
  DistMatrix(index_t r, index_t c, Piece p) : rows(r), cols(c), piece(std::move(p)) {
    local.resize(piece.rows(), piece.cols());
  }
};

// Calls f(local_row0, local_col0, global_row0, global_col0, nrows, ncols) for each block of
// the piece made of one row run and one column run.
template <class F>
void for_each_run_block(const Piece& p, F&& f) {
  index_t lc = 0;
  for (const auto& cr : p.col_runs) {
    index_t lr = 0;
    for (const auto& rr : p.row_runs) {
      f(lr, lc, rr.global, cr.global, rr.length, cr.length);
      lr += rr.length;
    }
    lc += cr.length;
  }
}

// Fills this rank's piece with the global random matrix of (seed, stream).
template <class T>
void fill_random(DistMatrix<T>& M, std::uint64_t seed, Stream s, Fill fill) {
  auto v = M.local.view();
  for_each_run_block(M.piece, [&](index_t lr, index_t lc, index_t gr, index_t gc, index_t nr,
                                  index_t nc) {
    fill_random_block(v.block(lr, lc, nr, nc), gr, gc, seed, s, fill);
  });
}

// Every rank's piece, on every rank (collective; the layouts' bookkeeping, not counted).
std::vector<Piece> allgather_pieces(const Piece& mine, const Comm& comm);

// Assembles the whole matrix on `root` (empty elsewhere). Every global element must be held by
// exactly one rank; ranks holding nothing take part with an empty piece. Not counted: used
// for verification and output, outside the timed multiply.
template <class T>
Matrix<T> gather_to_root(const DistMatrix<T>& M, const Comm& comm, int root = 0);

// The inverse: `whole` (significant on `root` only) is cut into every rank's piece of M.
template <class T>
void scatter_from_root(const Matrix<T>& whole, DistMatrix<T>& M, const Comm& comm, int root = 0);

}  // namespace distmm
