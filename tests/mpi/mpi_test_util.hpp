// Helpers for collective tests: run one distributed multiply on integer-valued inputs and
// compare the gathered C with BLAS on the gathered A and B (exact: integer products and sums).
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "mpi/algorithms/algorithm.hpp"
#include "mpi/runtime/distribution.hpp"
#include "node/blas.hpp"

namespace distmm::testing {

struct Outcome {
  bool skipped = false;   // the rank count does not fit the algorithm
  double max_err = -1;    // max |C - reference| on rank 0, broadcast to all
  bool words_match = false;
  bool messages_match = false;  // the busiest rank's messages against the analytic count
  std::string note;
};

// The algorithm of a name, as the CLI parses it (UsageError for an unknown name).
inline Algorithm algorithm_named(const std::string& name) {
  if (auto a = parse_algorithm(name)) return *a;
  throw UsageError("unknown algorithm '" + name + "'");
}

// alpha or beta as T (the real part for real types).
template <class T>
T as_scalar(std::complex<double> v) {
  if constexpr (is_complex_v<T>) return T(real_t<T>(v.real()), real_t<T>(v.imag()));
  else return T(v.real());
}

// The reference's type: double, or complex<double> for complex T.
template <class T>
using RefType = std::conditional_t<is_complex_v<T>, std::complex<double>, double>;

template <class T>
Outcome multiply_and_compare(const std::string& algo, const std::string& engine, index_t m,
                             index_t n, index_t k, std::complex<double> alpha,
                             std::complex<double> beta, AlgoOptions opts = {},
                             EngineOptions eopts = {}) {
  Outcome out;
  Comm world = Comm::world();
  std::unique_ptr<DistAlgorithm> a;
  try {
    a = make_algorithm(algorithm_named(algo), world, {m, n, k}, opts);
  } catch (const UsageError& e) {
    out.skipped = true;
    out.note = e.what();
    return out;
  }
  auto eng = make_engine(engine, eopts);
  DistMatrix<T> A(m, k, a->piece_a()), B(k, n, a->piece_b()), C(m, n, a->piece_c());
  const std::uint64_t seed = 1234 + m * 31 + n * 17 + k;
  fill_random(A, seed, Stream::A, Fill::integer);
  fill_random(B, seed, Stream::B, Fill::integer);
  fill_random(C, seed, Stream::C, Fill::integer);
  Matrix<T> c0 = gather_to_root(C, world);
  comm_counters() = CommCounters{};
  a->multiply(*eng, as_scalar<T>(alpha), A.local, B.local, as_scalar<T>(beta), C.local);
  CommCounters mine = comm_counters();

  // Measured words per rank against the analytic count for this exact layout.
  double w = double(mine.words_sent), wmax = 0, wsum = 0;
  MPI_Allreduce(&w, &wmax, 1, MPI_DOUBLE, MPI_MAX, world.get());
  MPI_Allreduce(&w, &wsum, 1, MPI_DOUBLE, MPI_SUM, world.get());
  CommEstimate est = a->analytic();
  out.words_match = !a->counts_words() ||
                    (wmax == est.words_max && std::abs(wsum / world.size() - est.words_mean) <=
                                                  1e-9 * std::max(1.0, est.words_mean));
  double msgs = double(mine.messages_sent), msgs_max = 0;
  MPI_Allreduce(&msgs, &msgs_max, 1, MPI_DOUBLE, MPI_MAX, world.get());
  out.messages_match = !a->counts_words() || msgs_max == est.messages_max;
  if (!out.messages_match)
    out.note += "messages max " + std::to_string(msgs_max) + " vs " + std::to_string(est.messages_max) + "; ";
  if (!out.words_match)
    out.note += "words max " + std::to_string(wmax) + " vs " + std::to_string(est.words_max) +
               ", mean " + std::to_string(wsum / world.size()) + " vs " +
               std::to_string(est.words_mean);

  Matrix<T> ga = gather_to_root(A, world), gb = gather_to_root(B, world),
            gc = gather_to_root(C, world);
  double err = 0;
  if (world.rank() == 0) {
    using R = RefType<T>;
    Matrix<R> ad(m, k), bd(k, n), ref(m, n);
    for (index_t t = 0; t < ad.size(); ++t) ad.data()[t] = R(ga.data()[t]);
    for (index_t t = 0; t < bd.size(); ++t) bd.data()[t] = R(gb.data()[t]);
    for (index_t t = 0; t < ref.size(); ++t) ref.data()[t] = R(c0.data()[t]);
    blas_gemm<R>(Op::N, Op::N, m, n, k, as_scalar<R>(alpha), ad.data(), ad.ld(), bd.data(),
                 bd.ld(), as_scalar<R>(beta), ref.data(), ref.ld());
    for (index_t t = 0; t < ref.size(); ++t)
      err = std::max(err, std::abs(R(gc.data()[t]) - ref.data()[t]));
  }
  MPI_Bcast(&err, 1, MPI_DOUBLE, 0, world.get());
  out.max_err = err;
  return out;
}

}  // namespace distmm::testing
