// Uneven block partitions: any size splits over any number of parts, the first n % p parts one
// larger, so no global padding is ever needed.
#pragma once
#include <algorithm>
#include <vector>

#include "../../src/core/types.hpp"

namespace distmm {

struct Partition1D {
  index_t n = 0;
  int parts = 1;

  index_t start(int i) const { return i * (n / parts) + std::min<index_t>(i, n % parts); }
  index_t size(int i) const { return start(i + 1) - start(i); }
  index_t max_size() const { return (n + parts - 1) / parts; }
  // Each part's size times `scale`: the element counts of a collective over the parts.
  std::vector<index_t> counts(index_t scale = 1) const {
    std::vector<index_t> c(std::size_t(std::max(parts, 0)));
    for (int i = 0; i < parts; ++i) c[std::size_t(i)] = scale * size(i);
    return c;
  }
  int owner(index_t g) const {
    index_t big = n / parts + 1, nbig = n % parts;
    if (g < big * nbig) return static_cast<int>(g / big);
    return static_cast<int>(nbig + (g - big * nbig) / std::max<index_t>(n / parts, 1));
  }
};

// The panels of [0, n) that two partitions of it (a: parts start_a(i), b: start_b(i)) both keep
// whole, at most `width` wide, each with the part of a and the part of b that hold it: SUMMA's
// panels, which never straddle an owner of A's columns or of B's rows.
struct KPanel {
  index_t k0, width;
  int a_owner, b_owner;
};
template <class StartA, class StartB>
std::vector<KPanel> common_panels(index_t n, index_t width, StartA start_a, StartB start_b) {
  std::vector<KPanel> panels;
  int a = 0, b = 0;
  for (index_t k0 = 0; k0 < n;) {
    while (start_a(a + 1) <= k0) ++a;
    while (start_b(b + 1) <= k0) ++b;
    const index_t end = std::min({k0 + width, start_a(a + 1), start_b(b + 1)});
    panels.push_back({k0, end - k0, a, b});
    k0 = end;
  }
  return panels;
}

// Consecutive global indices [global, global + length) stored at consecutive local indices.
struct Run {
  index_t global = 0, length = 0;
};

// Which rows and columns of a global matrix a rank stores: a local matrix of rows() x cols()
// whose element (r, c) is global element (row r's global index, column c's global index).
// A 2-D block has one run each way; ScaLAPACK's block-cyclic layout has many.
struct Piece {
  std::vector<Run> row_runs, col_runs;

  static Piece block(index_t row0, index_t nrows, index_t col0, index_t ncols) {
    Piece p;
    if (nrows > 0 && ncols > 0) {
      p.row_runs.push_back({row0, nrows});
      p.col_runs.push_back({col0, ncols});
    }
    return p;
  }
  // The runs process p of nprocs holds of n in nb-blocks dealt cyclically from process 0
  // (ScaLAPACK's layout along one dimension).
  static std::vector<Run> cyclic_runs(index_t n, index_t nb, int p, int nprocs) {
    std::vector<Run> runs;
    for (index_t b = p; b * nb < n; b += nprocs) runs.push_back({b * nb, std::min(nb, n - b * nb)});
    return runs;
  }
  static index_t total(const std::vector<Run>& runs) {
    index_t t = 0;
    for (const auto& r : runs) t += r.length;
    return t;
  }
  index_t rows() const { return total(row_runs); }
  index_t cols() const { return total(col_runs); }
  bool empty() const { return rows() == 0 || cols() == 0; }

  // Global index of each local row (or column).
  static std::vector<index_t> globals(const std::vector<Run>& runs) {
    std::vector<index_t> g;
    g.reserve(static_cast<std::size_t>(total(runs)));
    for (const auto& r : runs)
      for (index_t t = 0; t < r.length; ++t) g.push_back(r.global + t);
    return g;
  }
};

}  // namespace distmm
