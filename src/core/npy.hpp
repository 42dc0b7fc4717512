// The NumPy .npy format (format versions 1.0, 2.0 and 3.0): the header parser and writer.
// Pure functions on bytes, so that the parser can be fuzzed (tests/fuzz) and every rank can
// parse the same bytes the same way. Layout: "\x93NUMPY", major, minor, header length (2 bytes
// in 1.0, 4 in 2.0/3.0, little-endian), then a Python dict literal such as
//   {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }
// padded with spaces and a final newline so that the data starts on a 64-byte boundary.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "types.hpp"

namespace distmm {

// The longest header read (numpy writes a few hundred bytes; versions 2.0 and 3.0 allow 4 GiB).
inline constexpr std::size_t kNpyHeaderMax = std::size_t(1) << 20;

struct NpyError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct NpyHeader {
  std::string descr;           // e.g. "<f8"
  bool fortran_order = false;  // column-major data
  std::vector<std::int64_t> shape;
  std::size_t data_offset = 0; // bytes before the data
  int major = 1, minor = 0;
};

// Parses the header from the first bytes of a file (at least the whole header). Throws NpyError
// naming the problem ("not a .npy file", "header truncated", "bad shape", ...).
NpyHeader parse_npy_header(const std::uint8_t* bytes, std::size_t size);

// Bytes of the header for a 2-D array of this dtype, in Fortran or C order.
std::string make_npy_header(Dtype dt, std::int64_t rows, std::int64_t cols, bool fortran_order);

// '<f4' -> f32, '<f8' -> f64, '<c8' -> c32, '<c16' -> c64 (the dtype list's descrs);
// anything else throws NpyError with the fix.
Dtype npy_dtype(const std::string& descr);

}  // namespace distmm
