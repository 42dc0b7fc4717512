// Column-major matrices with a leading dimension, as BLAS stores them.
#pragma once
#include <sys/mman.h>

#include <cassert>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

#include "types.hpp"

namespace distmm {

// A non-owning window onto column-major storage: element (i, j) is data[i + j * ld].
template <class T>
struct MatrixView {
  T* data = nullptr;
  index_t rows = 0, cols = 0, ld = 1;

  T& operator()(index_t i, index_t j) const { return data[i + j * ld]; }
  MatrixView block(index_t i0, index_t j0, index_t r, index_t c) const {
    return {data + i0 + j0 * ld, r, c, ld};
  }
  bool empty() const { return rows == 0 || cols == 0; }
  index_t size() const { return rows * cols; }
  template <class U = T, class = std::enable_if_t<!std::is_const_v<U>>>
  operator MatrixView<const U>() const {
    return {data, rows, cols, ld};
  }
};

// 64-byte aligned storage so that vector loads and BLAS packing start on cache lines. Arrays
// of kHugePageMin bytes or more start on a 2 MiB boundary and ask for transparent huge pages:
// a fresh buffer's first touch (a page fault and the kernel's zeroing per page) then takes
// one fault per 2 MiB instead of per 4 KiB, and costs markedly less where many processes touch
// fresh memory at once (docs/performance.md, "Measurements behind the code": kHugePageMin).
inline constexpr std::size_t kHugePageMin = std::size_t(4) << 20;
inline constexpr std::size_t kHugePage = std::size_t(2) << 20;
template <class T>
struct AlignedDeleter {
  std::size_t align = 64;
  void operator()(T* p) const { ::operator delete[](p, std::align_val_t{align}); }
};
template <class T>
using AlignedPtr = std::unique_ptr<T[], AlignedDeleter<T>>;

// rows x cols elements, refusing a product that overflows 64 bits (a size from user input must
// never wrap to a small or negative allocation).
inline index_t checked_elements(index_t rows, index_t cols) {
  index_t n = 0;
  if (rows < 0 || cols < 0 || __builtin_mul_overflow(rows, cols, &n))
    throw UsageError("a " + std::to_string(rows) + " x " + std::to_string(cols) +
                     " matrix is beyond 64-bit sizes: use smaller sizes or more ranks");
  return n;
}

template <class T>
AlignedPtr<T> aligned_alloc_array(std::size_t n) {
  if (n == 0) return AlignedPtr<T>();
  if (n > std::size_t(INT64_MAX) / sizeof(T)) throw std::bad_alloc();
  const std::size_t bytes = n * sizeof(T), align = bytes >= kHugePageMin ? kHugePage : 64;
  void* p = ::operator new[](bytes, std::align_val_t{align});
#ifdef MADV_HUGEPAGE
  if (align == kHugePage) madvise(p, bytes, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
  return AlignedPtr<T>(static_cast<T*>(p), AlignedDeleter<T>{align});
}

// An owning, dense (ld == rows) column-major matrix.
template <class T>
class Matrix {
 public:
  Matrix() = default;
  Matrix(index_t rows, index_t cols) { resize(rows, cols); }

  void resize(index_t rows, index_t cols) {
    const index_t n = checked_elements(rows, cols);
    if (n > capacity_) {
      buf_ = aligned_alloc_array<T>(static_cast<std::size_t>(n));
      capacity_ = n;
    }
    rows_ = rows;
    cols_ = cols;
  }
  void fill(T v) { std::fill(data(), data() + size(), v); }

  T* data() { return buf_.get(); }
  const T* data() const { return buf_.get(); }
  index_t rows() const { return rows_; }
  index_t cols() const { return cols_; }
  index_t ld() const { return rows_ > 0 ? rows_ : 1; }
  index_t size() const { return rows_ * cols_; }
  T& operator()(index_t i, index_t j) { return buf_[i + j * rows_]; }
  const T& operator()(index_t i, index_t j) const { return buf_[i + j * rows_]; }
  MatrixView<T> view() { return {data(), rows_, cols_, ld()}; }
  MatrixView<const T> view() const { return {data(), rows_, cols_, ld()}; }

 private:
  AlignedPtr<T> buf_;
  index_t rows_ = 0, cols_ = 0, capacity_ = 0;
};

}  // namespace distmm
