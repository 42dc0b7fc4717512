// Views of op(X) and of an output block, column-major with a leading dimension, with logical
// sub-blocks that follow the transposition (shared by the recursive engines and the tilings).
#pragma once
#include <algorithm>
#include <array>

#include "../src/core/types.hpp"
#include "fused.hpp"

namespace distmm {

// op(X) of logical size rows x cols, stored column-major at p with leading dimension ld.
template <class T>
struct Operand {
  const T* p;
  index_t ld;
  Op op;
  index_t rows, cols;

  // Logical sub-block op(X)[r0 : r0 + nr, c0 : c0 + nc].
  Operand sub(index_t r0, index_t c0, index_t nr, index_t nc) const {
    const T* q = op == Op::N ? p + r0 + c0 * ld : p + c0 + r0 * ld;
    return {q, ld, op, nr, nc};
  }
  Operand quad(int i, int j) const {
    index_t hr = rows / 2, hc = cols / 2;
    return sub(i * hr, j * hc, hr, hc);
  }
  index_t stored_rows() const { return op == Op::N ? rows : cols; }
  index_t stored_cols() const { return op == Op::N ? cols : rows; }
  ConstBlock<T> block() const { return {p, ld}; }
};

template <class T>
struct Target {
  T* p;
  index_t ld;
  index_t rows, cols;
  Target sub(index_t r0, index_t c0, index_t nr, index_t nc) const {
    return {p + r0 + c0 * ld, ld, nr, nc};
  }
  Target quad(int i, int j) const {
    index_t hr = rows / 2, hc = cols / 2;
    return sub(i * hr, j * hc, hr, hc);
  }
  MutBlock<T> out(bool acc) const { return {p, ld, acc}; }
  ConstBlock<T> in() const { return {p, ld}; }
  Operand<T> as_operand() const { return {p, ld, Op::N, rows, cols}; }
};

// The four quadrants (11, 12, 21, 22) of an even-sized operand or target, for structured bindings.
template <class X>
std::array<X, 4> quadrants(const X& x) {
  return {x.quad(0, 0), x.quad(0, 1), x.quad(1, 0), x.quad(1, 1)};
}

}  // namespace distmm
