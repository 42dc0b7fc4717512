// Layouts of every kind for the layout and multiply tests, and local storage filled from a
// global function of (i, j), so that any rank can check any element it holds without a gather.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <functional>
#include <string>
#include <vector>

#include "mpi/runtime/layout.hpp"
#include "src/core/dtype.hpp"

namespace distmm::testing {

inline const char* kind_name(int kind) {
  static const char* names[] = {"block-cyclic", "row-slabs", "col-slabs", "blocks"};
  return names[kind];
}

// kind 0: block-cyclic (variant v: blockings, rsrc/csrc, padding, a smaller col-major grid),
// 1: row slabs (rank 0 empty, uneven; v odd: row-major with padding), 2: column slabs
// (reversed sizes), 3: a list of 6 uneven blocks dealt to ranks, mixed storage orders (v odd:
// each rank passes only its own).
inline Layout make_layout(int kind, int v, index_t rows, index_t cols, int P, int me) {
  if (kind == 0) {
    int pr = 1;
    for (int d = 1; d * d <= P; ++d)
      if (P % d == 0) pr = d;
    int pc = P / pr;
    GridOrder order = GridOrder::row_major;
    if (v % 2 == 1 && P > 2) pr = P - 1, pc = 1, order = GridOrder::col_major;
    return Layout::block_cyclic(rows, cols, 1 + v % 3, 2 - v % 2, pr, pc, v % pr, (v + 1) % pc,
                                v % 2 ? rows + 1 : 0, order);
  }
  if (kind == 1 || kind == 2) {
    const index_t along = kind == 1 ? rows : cols;
    std::vector<index_t> s(static_cast<std::size_t>(P), 0);
    if (P == 1) s[0] = along;
    else {
      const auto e = Layout::even_sizes(along, P - 1);
      for (int r = 1; r < P; ++r) s[std::size_t(r)] = e[std::size_t(kind == 1 ? r - 1 : P - 1 - r)];
    }
    const StorageOrder o = v % 2 ? StorageOrder::row_major : StorageOrder::col_major;
    const index_t ld = v % 2 ? (o == StorageOrder::row_major ? (kind == 1 ? cols : along) + 2 : 0) : 0;
    return kind == 1 ? Layout::row_slabs(rows, cols, s, ld, o) : Layout::col_slabs(rows, cols, s, ld, o);
  }
  const index_t rc[3] = {0, rows / 3, rows}, cc[4] = {0, cols / 4, cols * 2 / 3, cols};
  std::vector<LayoutBlock> all;
  std::vector<index_t> used(static_cast<std::size_t>(P), 0);
  for (int bi = 0; bi < 2; ++bi)
    for (int bj = 0; bj < 3; ++bj) {
      const int b = bi * 3 + bj;
      LayoutBlock x;
      x.row = rc[bi], x.rows = rc[bi + 1] - rc[bi], x.col = cc[bj], x.cols = cc[bj + 1] - cc[bj];
      x.owner = (b * 5 + v) % P;
      x.order = b % 2 ? StorageOrder::row_major : StorageOrder::col_major;
      const index_t tight = std::max<index_t>(1, x.order == StorageOrder::col_major ? x.rows : x.cols);
      x.ld = tight + v % 2;
      x.offset = used[std::size_t(x.owner)];
      used[std::size_t(x.owner)] += x.ld * std::max<index_t>(1, x.order == StorageOrder::col_major ? x.cols : x.rows);
      if (v % 2 == 0) all.push_back(x);
      else if (x.owner == me) x.owner = -1, all.push_back(x);
    }
  return Layout::blocks(rows, cols, all);
}

// Small integers, exact in every type: element (i, j) of matrix `seed`.
template <class T>
T value(int seed, index_t i, index_t j) {
  const double re = double((i * 7 + j * 13 + seed * 5) % 7) - 3.0;
  if constexpr (is_complex_v<T>) {
    const double im = double((i * 5 + j * 3 + seed * 11) % 5) - 2.0;
    return T(real_t<T>(re), real_t<T>(im));
  } else {
    return T(re);
  }
}


// f(global i, global j, storage index) for each element this rank holds.
template <class F>
void for_each_held(const RankTiles& tiles, F&& f) {
  for (const Tile& t : tiles)
    for (const Seg& c : t.cols)
      for (index_t j = 0; j < c.length; ++j)
        for (const Seg& r : t.rows)
          for (index_t i = 0; i < r.length; ++i) f(r.global + i, c.global + j, t.addr(r.local + i, c.local + j));
}

// This rank's storage of `l`, its elements set by g(i, j), the padding by `pad`.
template <class T, class G>
std::vector<T> local_storage(const ResolvedLayout& l, int me, G&& g, T pad) {
  std::vector<T> s(std::size_t(std::max<index_t>(1, local_extent(l.ranks[std::size_t(me)]))), pad);
  for_each_held(l.ranks[std::size_t(me)], [&](index_t i, index_t j, index_t at) { s[std::size_t(at)] = g(i, j); });
  return s;
}

}  // namespace distmm::testing
