// Block-addressable random matrices: the value of global element (i, j) depends only on the
// seed, the matrix's stream and (i, j), so every rank generates exactly its own piece and the
// inputs (hence the results) do not depend on the number of ranks or the layout. The element
// functions run on GPUs too (cuda/device_random.cu), so device-generated inputs are the same
// numbers, bit for bit.
#pragma once
#include <cstdint>

#include "matrix.hpp"

namespace distmm {

enum class Stream : std::uint64_t { A = 1, B = 2, C = 3, Probe = 4 };

// Values uniform in [-1, 1) (Kind::uniform) or small integers in [-4, 4] (Kind::integer),
// whose products and sums are exact in float for k up to 2^19: tests compare bit for bit.
enum class Fill { uniform, integer };

// splitmix64's finaliser: a bijective 64-bit hash.
DISTMM_HOST_DEVICE constexpr std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

DISTMM_HOST_DEVICE inline double random_value(std::uint64_t seed, Stream s, index_t i, index_t j, Fill fill) {
  std::uint64_t h = mix64(seed ^ mix64(static_cast<std::uint64_t>(s) * 0x9E3779B97F4A7C15ull ^
                                       mix64(static_cast<std::uint64_t>(i) ^
                                             (static_cast<std::uint64_t>(j) << 32 |
                                              static_cast<std::uint64_t>(j) >> 32))));
  if (fill == Fill::integer) return static_cast<double>(static_cast<int>(h % 9) - 4);
  return static_cast<double>(h >> 11) * 0x1.0p-52 - 1.0;
}

// Element (i, j) of the global random matrix of type T: real types take random_value itself;
// complex types take it as the real part and an independent draw (another key) as the
// imaginary part, so integer fills stay exact in complex arithmetic too.
// Component `part` of element (i, j): 0 the real part (or the real value), 1 the imaginary part.
DISTMM_HOST_DEVICE inline double random_component(std::uint64_t seed, Stream s, index_t i, index_t j,
                                                  Fill fill, int part) {
  return random_value(part ? mix64(seed ^ 0x5851F42D4C957F2Dull) : seed, s, i, j, fill);
}
template <class T>
T random_element(std::uint64_t seed, Stream s, index_t i, index_t j, Fill fill) {
  const double re = random_component(seed, s, i, j, fill, 0);
  if constexpr (is_complex_v<T>) {
    const double im = random_component(seed, s, i, j, fill, 1);
    return T(static_cast<real_t<T>>(re), static_cast<real_t<T>>(im));
  } else {
    return static_cast<T>(re);
  }
}

// Fills `out` with the rows/columns of the global matrix that start at (row0, col0).
template <class T>
void fill_random_block(MatrixView<T> out, index_t row0, index_t col0, std::uint64_t seed, Stream s,
                       Fill fill) {
  for (index_t j = 0; j < out.cols; ++j)
    for (index_t i = 0; i < out.rows; ++i)
      out(i, j) = random_element<T>(seed, s, row0 + i, col0 + j, fill);
}

}  // namespace distmm
