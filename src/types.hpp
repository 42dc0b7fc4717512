// Core vocabulary shared by every layer: sizes, transposition flags, dtypes and the
// error type that the CLI turns into a one-line message with exit code 2.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

namespace distmm {

using index_t = std::int64_t;

enum class Op { N, T };  // op(X) = X or X^T, as BLAS's transa/transb

enum class Dtype { f32, f64 };

inline const char* to_string(Dtype d) { return d == Dtype::f32 ? "f32" : "f64"; }
inline std::size_t size_of(Dtype d) { return d == Dtype::f32 ? 4 : 8; }

template <class T> constexpr Dtype dtype_of();
template <> constexpr Dtype dtype_of<float>() { return Dtype::f32; }
template <> constexpr Dtype dtype_of<double>() { return Dtype::f64; }

// Bad input from the user (sizes, names, rank counts, files). Every rank that detects it
// must detect it the same way, or the detection must be agreed on collectively, so that all
// ranks leave together; the message names the fix.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Verification found a wrong product: exit non-zero, but it is not the user's fault.
struct VerificationFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace distmm
