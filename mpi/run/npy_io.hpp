// NumPy .npy files read and written in parallel with MPI-IO: each rank reads and writes exactly
// its own piece through a file view (collective I/O); no rank ever holds a whole matrix.
// Problems with a file end on every rank alike as one UsageError naming the file and the fix.
#pragma once
#include <memory>
#include <string>

#include "../../src/core/npy.hpp"
#include "../runtime/distribution.hpp"

namespace distmm {

class TemporaryFile;

struct NpyInfo {
  std::string path;
  Dtype dtype = Dtype::f64;
  index_t rows = 0, cols = 0;
  bool fortran_order = false;
  std::size_t data_offset = 0;
};

// Rank 0 opens the file and checks its header, shape (2-D) and size; all ranks get the result,
// or all throw the same UsageError ("A.npy: ...").
NpyInfo npy_inspect(const std::string& path, const Comm& comm);

// Fills M's piece with op(X) of the file's matrix X (GEMM's op: N, T, or C = conjugate
// transpose, which is T for real types); for T and C the file's M.cols x M.rows array is read
// and transposed (and conjugated) locally.
template <class T>
void npy_read_piece(const NpyInfo& info, Op op, DistMatrix<T>& M, const Comm& comm);

// An output written under a temporary name in the target directory, made visible by rename
// only by commit(); destroyed uncommitted (an error, a failed verification, a signal), it leaves
// nothing. Only a regular file (or nothing) at the path is replaced: anything else is refused.
class NpyOutput {
 public:
  NpyOutput(std::string path, const Comm& comm);  // checks the path and its directory
  NpyOutput(const NpyOutput&) = delete;
  NpyOutput& operator=(const NpyOutput&) = delete;
  ~NpyOutput();
  template <class T>
  void write(const DistMatrix<T>& M);  // collective; Fortran order
  void commit();                       // collective: rename, fsync the directory

 private:
  std::string path_;
  const Comm& comm_;
  std::unique_ptr<TemporaryFile> tmp_;
};

}  // namespace distmm
