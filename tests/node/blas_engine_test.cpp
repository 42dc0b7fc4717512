#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <thread>

#include "node/blas.hpp"
#include "node/engine.hpp"
#include "src/core/random.hpp"

using namespace distmm;

namespace {
// Independent reference: the textbook triple loop in long double (complex<long double>).
template <class T>
using Wide = std::conditional_t<is_complex_v<T>, std::complex<long double>, long double>;
template <class T>
Wide<T> element(const Matrix<T>& X, Op op, index_t i, index_t j) {
  const Wide<T> v = static_cast<Wide<T>>(op == Op::N ? X(i, j) : X(j, i));
  if constexpr (is_complex_v<T>) return op == Op::C ? std::conj(v) : v;
  else return v;
}
template <class T>
void naive(Op ta, Op tb, index_t m, index_t n, index_t k, T alpha, const Matrix<T>& A,
           const Matrix<T>& B, T beta, Matrix<T>& C) {
  for (index_t j = 0; j < n; ++j)
    for (index_t i = 0; i < m; ++i) {
      Wide<T> s = 0;
      for (index_t l = 0; l < k; ++l) s += element(A, ta, i, l) * element(B, tb, l, j);
      C(i, j) = T(static_cast<Wide<T>>(alpha) * s + static_cast<Wide<T>>(beta) * static_cast<Wide<T>>(C(i, j)));
    }
}
}  // namespace

template <class T>
class BlasEngineTest : public ::testing::Test {};
using Types = ::testing::Types<float, double, std::complex<float>, std::complex<double>>;
TYPED_TEST_SUITE(BlasEngineTest, Types);

TYPED_TEST(BlasEngineTest, MatchesTripleLoopOnOddShapes) {
  using T = TypeParam;
  auto e = make_engine("blas", EngineOptions{});
  for (auto [m, n, k] : std::vector<std::array<index_t, 3>>{{1, 1, 1}, {7, 5, 3}, {13, 1, 17}, {1, 29, 1}, {31, 37, 41}}) {
    for (Op ta : {Op::N, Op::T, Op::C})
      for (Op tb : {Op::N, Op::T, Op::C}) {
        Matrix<T> A(ta == Op::N ? m : k, ta == Op::N ? k : m), B(tb == Op::N ? k : n, tb == Op::N ? n : k);
        Matrix<T> C(m, n), R(m, n);
        fill_random_block(A.view(), 0, 0, 3, Stream::A, Fill::integer);
        fill_random_block(B.view(), 0, 0, 3, Stream::B, Fill::integer);
        fill_random_block(C.view(), 0, 0, 3, Stream::C, Fill::integer);
        R = Matrix<T>(m, n);
        std::copy(C.data(), C.data() + C.size(), R.data());
        e->gemm(ta, tb, m, n, k, T(2), A.data(), A.ld(), B.data(), B.ld(), T(-1), C.data(), C.ld());
        naive<T>(ta, tb, m, n, k, T(2), A, B, T(-1), R);
        for (index_t t = 0; t < C.size(); ++t) ASSERT_EQ(C.data()[t], R.data()[t]) << m << "x" << n << "x" << k;
      }
  }
}

TEST(EngineRegistry, UnknownNameNamesTheKnownOnes) {
  try {
    make_engine("nope", EngineOptions{});
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("blas"), std::string::npos);
  }
}

// After a threaded call OpenBLAS's idle workers would spin for ~0.1 s on cores that the other
// engines' OpenMP threads need; distmm has them sleep within about a millisecond.
TEST(Blas, IdleWorkersDoNotSpinAfterAThreadedCall) {
  if (!blas_idle_workers_quieted()) GTEST_SKIP() << "OPENBLAS_THREAD_TIMEOUT set by the user, or not OpenBLAS's pthread build";
  auto cpu_seconds = [] {
    rusage r{};
    getrusage(RUSAGE_SELF, &r);
    return double(r.ru_utime.tv_sec + r.ru_stime.tv_sec) + 1e-6 * double(r.ru_utime.tv_usec + r.ru_stime.tv_usec);
  };
  const int saved = blas_get_threads();
  blas_set_threads(2);
  const index_t n = 600;  // large enough for OpenBLAS to use its threads
  Matrix<double> A(n, n), B(n, n), C(n, n);
  fill_random_block(A.view(), 0, 0, 3, Stream::A, Fill::uniform);
  fill_random_block(B.view(), 0, 0, 3, Stream::B, Fill::uniform);
  double idle = 0;
  for (int round = 0; round < 3; ++round) {
    blas_gemm<double>(Op::N, Op::N, n, n, n, 1.0, A.data(), n, B.data(), n, 0.0, C.data(), n);
    const double before = cpu_seconds();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    idle += cpu_seconds() - before;
  }
  blas_set_threads(saved);
  // Spinning workers burn ~0.1 s of CPU per call (0.3 s here); sleeping ones next to nothing.
  EXPECT_LT(idle, 0.06) << "CPU seconds used while the process slept after 3 threaded calls";
}

namespace {
// An engine that, like gpu-tiled, supports the real types only.
class RealOnlyEngine final : public EngineBase<RealOnlyEngine> {
 public:
  static constexpr DtypeSet kDtypes = DtypeSet::real();
  std::string name() const override { return "real-only"; }
  template <class T>
  void run(Op, Op, index_t, index_t, index_t, T, const T*, index_t, const T*, index_t, T, T* C, index_t) {
    C[0] = T(42);
  }
};
}  // namespace

TEST(EngineRegistry, EveryEngineNamesItsDtypesAndUnsupportedOnesAreAClearError) {
  for (const EngineInfo& e : engine_registry()) {
    EXPECT_FALSE(e.dtypes.names().empty()) << e.name;
    EXPECT_EQ(&engine_info(e.name), &e);
    if (e.memory == Memory::host) EXPECT_EQ(e.make({})->dtypes().names(), e.dtypes.names()) << e.name;
  }
  RealOnlyEngine r;
  double c = 0;
  r.gemm(Op::N, Op::N, 1, 1, 1, 1.0, &c, 1, &c, 1, 0.0, &c, 1);
  EXPECT_EQ(c, 42.0);
  std::complex<float> z = 0;
  try {
    r.gemm(Op::N, Op::N, 1, 1, 1, std::complex<float>(1), &z, 1, &z, 1, std::complex<float>(0), &z, 1);
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "engine 'real-only' supports f32, f64, not c32: use --engine blas or another dtype");
  }
}
