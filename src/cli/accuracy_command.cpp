// `distmm accuracy`: error of each engine and level against a higher-precision reference
// (long double, complex<long double> for complex types), on random matrices and on seed 003's
// test matrices
// A = I + u v^T, B = I - u v^T / (1 + v^T u), u_i = 1/(N+1-i), v_i = sqrt(i), whose exact
// product is I; and on random matrices with a wide exponent range (each entry times 2^s, s
// uniform in [-24, 24]), where fixed-point emulation is weakest. Prints max and mean absolute
// error and the relative Frobenius error, and for engines that emulate their products, what ran
// (moduli, or products run natively where the inputs defeat the emulation).
#include <cmath>
#include <iomanip>
#include <iostream>
#include <vector>

#include "../../node/engine.hpp"
#include "../core/random.hpp"
#include "commands.hpp"

namespace distmm {
namespace {

struct Errors {
  double max_abs = 0, mean_abs = 0, rel_frobenius = 0;
};

// The reference's type: long double, or complex<long double> for complex inputs.
template <class T>
using Ref = std::conditional_t<is_complex_v<T>, std::complex<long double>, long double>;

template <class T>
void make_inputs(const std::string& matrices, index_t n, Matrix<T>& A, Matrix<T>& B,
                 std::vector<Ref<T>>& ref) {
  A.resize(n, n), B.resize(n, n);
  ref.assign(static_cast<std::size_t>(n * n), Ref<T>(0));
  if (matrices == "identity") {
    std::vector<long double> u(n), v(n);
    long double vtu = 0;
    for (index_t i = 0; i < n; ++i) {
      u[i] = 1.0L / static_cast<long double>(n - i);  // 1 / (N + 1 - i) with i from 1
      v[i] = std::sqrt(static_cast<long double>(i + 1));
      vtu += u[i] * v[i];
    }
    for (index_t j = 0; j < n; ++j)
      for (index_t i = 0; i < n; ++i) {
        A(i, j) = static_cast<T>(static_cast<real_t<T>>((i == j) + u[i] * v[j]));
        B(i, j) = static_cast<T>(static_cast<real_t<T>>((i == j) - u[i] * v[j] / (1 + vtu)));
      }
  } else {
    fill_random_block(A.view(), 0, 0, 11, Stream::A, Fill::uniform);
    fill_random_block(B.view(), 0, 0, 11, Stream::B, Fill::uniform);
    if (matrices == "wide-range") {
      // 2^s from the generator's own stream: s = floor(49 x) - 24 for x uniform in [0, 1).
      Matrix<T> S(n, n);
      for (Matrix<T>* X : {&A, &B}) {
        fill_random_block(S.view(), 0, 0, X == &A ? 12 : 13, Stream::C, Fill::uniform);
        for (index_t t = 0; t < n * n; ++t) {
          const double x = (double(std::real(S.data()[t])) + 1) / 2;
          X->data()[t] *= real_t<T>(std::ldexp(1.0, int(std::floor(49 * x)) - 24));
        }
      }
    }
  }
  // Reference on the rounded inputs, in long double (identity inputs: rounded, so not exactly I).
  for (index_t j = 0; j < n; ++j)
    for (index_t l = 0; l < n; ++l) {
      const Ref<T> b = static_cast<Ref<T>>(B(l, j));
      for (index_t i = 0; i < n; ++i) ref[i + j * n] += static_cast<Ref<T>>(A(i, l)) * b;
    }
}

template <class T>
Errors measure(Engine& e, const Matrix<T>& A, const Matrix<T>& B,
               const std::vector<Ref<T>>& ref, index_t n) {
  Matrix<T> C(n, n);
  C.fill(T(0));
  e.gemm(Op::N, Op::N, n, n, n, T(1), A.data(), A.ld(), B.data(), B.ld(), T(0), C.data(), C.ld());
  Errors r;
  long double err2 = 0, ref2 = 0;
  for (index_t t = 0; t < n * n; ++t) {
    long double d = std::abs(static_cast<Ref<T>>(C.data()[t]) - ref[t]);
    r.max_abs = std::max(r.max_abs, static_cast<double>(d));
    r.mean_abs += static_cast<double>(d);
    err2 += d * d, ref2 += std::norm(ref[t]);
  }
  r.mean_abs /= double(n * n);
  r.rel_frobenius = static_cast<double>(std::sqrt(err2 / ref2));
  return r;
}

template <class T>
void report(const AccuracyOptions& o, std::ostream& os) {
  for (const std::string& matrices : {std::string("random"), std::string("identity"), std::string("wide-range")}) {
    Matrix<T> A, B;
    std::vector<Ref<T>> ref;
    make_inputs<T>(matrices, o.n, A, B, ref);
    for (const auto& name : o.engines)
      for (int L = 0; L <= o.max_levels; ++L) {
        // Only the Strassen-like engines have levels.
        if (L > 0 && !engine_info(name).recursive) break;
        EngineOptions eo;
        eo.levels = L;
        eo.cutoff = 16;
        eo.threads = o.threads;
        eo.accuracy = o.accuracy;
        auto e = make_engine(name, eo);
        Errors r = measure<T>(*e, A, B, ref, o.n);
        os << std::left << std::setw(11) << matrices << std::setw(22) << name << std::setw(7) << L
           << std::scientific << std::setprecision(3) << std::setw(12) << r.max_abs
           << std::setw(12) << r.mean_abs << std::setw(12) << r.rel_frobenius;
        if (engine_info(name).emulated) os << "  " << e->describe();
        os << "\n";
      }
  }
}

}  // namespace

int accuracy_command(const AccuracyOptions& o, std::ostream& os, int rank) {
  if (rank != 0) return 0;
  const auto dt = parse_dtype(o.dtype);
  if (!dt) throw UsageError("unknown --dtype '" + o.dtype + "': use " + dtype_names(", "));
  for (const auto& name : o.engines) {  // unknown names and dtypes fail before any work
    const EngineInfo& e = engine_info(name);
    if (!e.dtypes.contains(*dt)) throw_unsupported_dtype(name, e.dtypes, *dt);
  }
  os << "accuracy: n = " << o.n << ", " << o.dtype << ", reference in "
     << (is_complex(*dt) ? "complex long double" : "long double") << "\n"
     << std::left << std::setw(11) << "matrices" << std::setw(22) << "engine" << std::setw(7)
     << "levels" << std::setw(12) << "max abs" << std::setw(12) << "mean abs" << std::setw(12)
     << "rel frob" << "\n";
  dispatch(*dt, [&](auto tag) { report<typename decltype(tag)::type>(o, os); });
  return 0;
}

}  // namespace distmm
