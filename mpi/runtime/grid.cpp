#include "grid.hpp"

#include <cmath>
#include <limits>

namespace distmm {

CartGrid::CartGrid(const Comm& parent, std::vector<int> dims, bool periodic)
    : dims_(std::move(dims)), coords_(dims_.size(), 0) {
  std::vector<int> periods(dims_.size(), periodic ? 1 : 0);
  MPI_Comm c;
  // No reordering: ranks keep their place so that layouts are predictable in tests and reports.
  MPI_Cart_create(parent.get(), static_cast<int>(dims_.size()), dims_.data(), periods.data(), 0, &c);
  cart_ = Comm(c, true);
  if (cart_.valid())
    MPI_Cart_coords(cart_.get(), cart_.rank(), static_cast<int>(dims_.size()), coords_.data());
}

int CartGrid::rank_of(std::vector<int> coords) const {
  for (std::size_t a = 0; a < coords.size(); ++a)
    coords[a] = ((coords[a] % dims_[a]) + dims_[a]) % dims_[a];
  int r;
  MPI_Cart_rank(cart_.get(), coords.data(), &r);
  return r;
}

Comm CartGrid::along(std::vector<int> axes) const {
  std::vector<int> remain(dims_.size(), 0);
  for (int a : axes) remain[a] = 1;
  MPI_Comm c;
  MPI_Cart_sub(cart_.get(), remain.data(), &c);
  return Comm(c, true);
}

std::string CartGrid::shape() const {
  std::string s;
  for (std::size_t a = 0; a < dims_.size(); ++a) s += (a ? "x" : "") + std::to_string(dims_[a]);
  return s;
}

std::pair<int, int> choose_grid_2d(int P, index_t m, index_t n) {
  std::pair<int, int> best{P, 1};
  double best_cost = std::numeric_limits<double>::max();
  for (int pr = 1; pr <= P; ++pr) {
    if (P % pr) continue;
    int pc = P / pr;
    double cost = static_cast<double>(m) * pc + static_cast<double>(n) * pr;
    if (cost < best_cost - 1e-9) best_cost = cost, best = {pr, pc};
  }
  return best;
}

int exact_root(int P, int d) {
  int q = static_cast<int>(std::lround(std::pow(static_cast<double>(P), 1.0 / d)));
  for (int c = std::max(1, q - 1); c <= q + 1; ++c) {
    long long v = 1;
    for (int t = 0; t < d; ++t) v *= c;
    if (v == P) return c;
  }
  return 0;
}

}  // namespace distmm

namespace distmm {
std::pair<int, int> grid_2d_for(int P, index_t m, index_t n, int grid_rows) {
  if (grid_rows <= 0) return choose_grid_2d(P, m, n);
  if (P % grid_rows)
    throw UsageError("--grid-rows " + std::to_string(grid_rows) + " does not divide " +
                     std::to_string(P) + " ranks: use a divisor of the rank count or 0 (auto)");
  return {grid_rows, P / grid_rows};
}
}  // namespace distmm

namespace distmm {
int root_or_error(int P, int d, const std::string& algo) {
  int q = exact_root(P, d);
  if (q) return q;
  int lo = static_cast<int>(std::floor(std::pow(double(P), 1.0 / d) + 1e-9));
  auto pw = [d](int x) { return d == 2 ? x * x : x * x * x; };
  throw UsageError(algo + " needs a " + (d == 2 ? "square" : "cube") + " number of ranks, got " +
                   std::to_string(P) + ": use " + std::to_string(pw(lo)) + " or " +
                   std::to_string(pw(lo + 1)) + " ranks, or --algo summa");
}
}  // namespace distmm
