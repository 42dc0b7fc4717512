// Core vocabulary shared by every layer: sizes, transposition flags, the dtype list and the
// error types that the CLI turns into a one-line message with exit code 2.
#pragma once
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "dtype.hpp"

// Functions that CUDA kernels share with the host (the input generator, the emulation's integer
// arithmetic): host and device code under nvcc, plain functions elsewhere.
#if defined(__CUDACC__)
#define DISTMM_HOST_DEVICE __host__ __device__
#else
#define DISTMM_HOST_DEVICE
#endif

namespace distmm {

using index_t = std::int64_t;

// op(X) = X, X^T or X^H, as BLAS's transa/transb. For real types C is the same as T.
enum class Op { N, T, C };

inline char to_char(Op o) { return o == Op::N ? 'N' : o == Op::T ? 'T' : 'C'; }
inline std::optional<Op> parse_op(std::string_view s) {
  if (s == "N" || s == "n") return Op::N;
  if (s == "T" || s == "t") return Op::T;
  if (s == "C" || s == "c") return Op::C;
  return std::nullopt;
}
// "AxBx...": counts >= 1 of up to 7 digits separated by 'x' (--stages, --cuboid-grid, tune's
// --shapes); empty where malformed.
inline std::vector<int> parse_counts(const std::string& text) {
  std::vector<int> counts;
  std::size_t at = 0;
  while (true) {
    const std::size_t x = text.find('x', at);
    const std::string t = text.substr(at, x == std::string::npos ? std::string::npos : x - at);
    if (t.empty() || t.size() > 7 || t.find_first_not_of("0123456789") != std::string::npos || std::stoi(t) < 1)
      return {};
    counts.push_back(std::stoi(t));
    if (x == std::string::npos) return counts;
    at = x + 1;
  }
}
// The op that is actually applied to elements of type T (C on a real type is T).
template <class T>
constexpr Op effective_op(Op o) {
  return o == Op::C && !is_complex_v<T> ? Op::T : o;
}

// Bad input from the user (sizes, names, rank counts, files). Every rank that detects it
// must detect it the same way, or the detection must be agreed on collectively, so that all
// ranks leave together; the message names the fix.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The result could not be written (disk full, I/O error): exit 1; no output file was left and an
// existing one was not touched.
struct OutputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Verification found a wrong product: exit non-zero, but it is not the user's fault.
struct VerificationFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace distmm
