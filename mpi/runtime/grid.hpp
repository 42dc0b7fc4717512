// Cartesian process grids: a pr x pc grid for SUMMA, a periodic q x q torus for Cannon, a
// q x q x q grid for DNS. Each owns its communicators (RAII) and hands out the sub-communicator
// along any set of axes.
#pragma once
#include <string>
#include <vector>

#include "comm.hpp"

namespace distmm {

class CartGrid {
 public:
  // Ranks beyond prod(dims) of `parent` get an invalid grid (valid() is false).
  CartGrid(const Comm& parent, std::vector<int> dims, bool periodic);

  bool valid() const { return cart_.valid(); }
  const Comm& comm() const { return cart_; }
  int dim(int axis) const { return dims_[axis]; }
  int coord(int axis) const { return coords_[axis]; }
  // Rank in comm() of the process at these coordinates (wrapped when periodic).
  int rank_of(std::vector<int> coords) const;
  // Communicator of the processes that share every coordinate except those in `axes`.
  Comm along(std::vector<int> axes) const;
  std::string shape() const;  // "4x4"

 private:
  Comm cart_;
  std::vector<int> dims_, coords_;
};

// pr x pc with pr * pc = P minimising the words SUMMA moves, k (m pc + n pr) / P.
std::pair<int, int> choose_grid_2d(int P, index_t m, index_t n);

// q with q^d == P, or 0 when P is not a perfect d-th power.
int exact_root(int P, int d);

}  // namespace distmm

namespace distmm {
// q with q^d == P for an algorithm that needs a perfect square (d = 2) or cube (d = 3) of ranks;
// otherwise a UsageError naming the nearest valid counts and the alternative.
int root_or_error(int P, int d, const std::string& algo);

// The user's --grid-rows when given (checked to divide P), else choose_grid_2d.
std::pair<int, int> grid_2d_for(int P, index_t m, index_t n, int grid_rows);
}  // namespace distmm
