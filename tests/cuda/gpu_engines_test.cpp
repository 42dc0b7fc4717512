// GPU engines against BLAS on the host: every engine, levels 0 to 3, odd shapes, both dtypes,
// alpha/beta, transposes (integer inputs: exact). Skipped, visibly, where no GPU is seen.
#include <gtest/gtest.h>

#include <cmath>

#include "cuda/device_info.hpp"
#include "cuda/gpu_engines.hpp"
#include "node/blas.hpp"
#include "src/random.hpp"

using namespace distmm;

namespace {

#define REQUIRE_GPU()                                                                     \
  if (gpu_count() == 0)                                                                   \
    GTEST_SKIP() << "no GPU visible (" << gpu_summary() << "): GPU engine tests skipped"

template <class T>
double max_diff(Engine& e, Op ta, Op tb, index_t m, index_t n, index_t k, T alpha, T beta,
                Fill fill) {
  Matrix<T> A(ta == Op::N ? m : k, ta == Op::N ? k : m), B(tb == Op::N ? k : n, tb == Op::N ? n : k);
  Matrix<T> C(m, n), R(m, n);
  fill_random_block(A.view(), 0, 0, 5, Stream::A, fill);
  fill_random_block(B.view(), 0, 0, 5, Stream::B, fill);
  fill_random_block(C.view(), 0, 0, 5, Stream::C, fill);
  fill_random_block(R.view(), 0, 0, 5, Stream::C, fill);
  e.gemm(ta, tb, m, n, k, alpha, A.data(), A.ld(), B.data(), B.ld(), beta, C.data(), C.ld());
  blas_gemm<T>(ta, tb, m, n, k, alpha, A.data(), A.ld(), B.data(), B.ld(), beta, R.data(), R.ld());
  double d = 0;
  for (index_t t = 0; t < C.size(); ++t) d = std::max(d, std::abs(double(C.data()[t]) - double(R.data()[t])));
  return std::isnan(d) ? INFINITY : d;
}

TEST(GpuEngines, ExactOnIntegerInputs) {
  REQUIRE_GPU();
  const index_t shapes[][3] = {{1, 1, 1}, {17, 19, 23}, {64, 64, 64}, {1, 33, 40}, {127, 131, 129}, {256, 200, 300}};
  for (const auto& name : gpu_engine_names())
    for (int L = 0; L <= 3; ++L) {
      if (L > 0 && (name == "cublas" || name == "gpu-tiled")) break;
      EngineOptions o;
      o.levels = L;
      auto e = make_gpu_engine(name, o);
      for (const auto& s : shapes)
        for (Op ta : {Op::N, Op::T})
          for (Op tb : {Op::N, Op::T}) {
            EXPECT_EQ(max_diff<double>(*e, ta, tb, s[0], s[1], s[2], 2.0, -1.0, Fill::integer), 0.0)
                << name << " L=" << L << " " << s[0] << "x" << s[1] << "x" << s[2];
            EXPECT_EQ(max_diff<float>(*e, ta, tb, s[0], s[1], s[2], 1.f, 0.f, Fill::integer), 0.0)
                << name << " f32 L=" << L;
          }
    }
}

TEST(GpuEngines, UniformInputsWithinTheLevelBound) {
  REQUIRE_GPU();
  for (const char* name : {"gpu-strassen", "gpu-strassen-lowmem", "gpu-winograd"})
    for (int L = 1; L <= 3; ++L) {
      EngineOptions o;
      o.levels = L;
      auto e = make_gpu_engine(name, o);
      const index_t n = 512;
      double d = max_diff<float>(*e, Op::N, Op::N, n, n, n, 1.f, 0.f, Fill::uniform);
      EXPECT_LE(d / std::sqrt(double(n)), (n + 2) * 6e-8 * std::pow(12.0, L)) << name << " L=" << L;
      EXPECT_GT(d, 0.0) << name;
    }
}

TEST(GpuEngines, UnknownWithoutGpuIsAClearError) {
  if (gpu_count() > 0) GTEST_SKIP() << "a GPU is visible";
  if (gpu_engine_names().empty()) GTEST_SKIP() << "built without CUDA";
  try {
    make_gpu_engine("gpu-winograd", {});
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--engine blas"), std::string::npos);
  }
}

}  // namespace

namespace {
// Cannon and SUMMA hold C on the GPU across their steps: the same calls with a held output must
// give the same result as without.
TEST(GpuEngines, HeldOutputAcrossCalls) {
  REQUIRE_GPU();
  for (const char* name : {"cublas", "gpu-winograd"}) {
    auto e = make_gpu_engine(name, {});
    const index_t m = 70, n = 50, k = 30, ld = 73;
    Matrix<double> A(m, k), B(k, n), C(ld, n), R(ld, n);
    fill_random_block(A.view(), 0, 0, 9, Stream::A, Fill::integer);
    fill_random_block(B.view(), 0, 0, 9, Stream::B, Fill::integer);
    fill_random_block(C.view(), 0, 0, 9, Stream::C, Fill::integer);
    std::copy(C.data(), C.data() + C.size(), R.data());
    e->hold_output(C.data(), m, n, ld);
    for (int step = 0; step < 3; ++step)  // column halves, as gemm_with_progress cuts them
      for (index_t j0 : {index_t(0), n / 2}) {
        index_t nc = j0 == 0 ? n / 2 : n - n / 2;
        e->gemm(Op::N, Op::N, m, nc, k, 1.0, A.data(), m, B.data() + j0 * k, k, step ? 1.0 : 0.5,
                C.data() + j0 * ld, ld);
        blas_gemm<double>(Op::N, Op::N, m, nc, k, 1.0, A.data(), m, B.data() + j0 * k, k,
                          step ? 1.0 : 0.5, R.data() + j0 * ld, ld);
      }
    e->release_output();
    double d = 0;
    for (index_t j = 0; j < n; ++j)
      for (index_t i = 0; i < m; ++i) d = std::max(d, std::abs(C(i, j) - R(i, j)));
    EXPECT_EQ(d, 0.0) << name;
  }
}
}  // namespace

namespace {
// A call into a held output returns while the GPU still computes (overlaps_host()), but it must
// have consumed its operands: Cannon receives the next blocks into the same host buffers at once.
TEST(GpuEngines, HeldCallsConsumeTheirOperandsBeforeReturning) {
  REQUIRE_GPU();
  for (const char* name : {"cublas", "gpu-winograd"}) {
    EngineOptions o;
    o.levels = 1;
    auto e = make_gpu_engine(name, o);
    EXPECT_TRUE(e->overlaps_host());
    const index_t n = 1536;  // long enough that the product is still running on return
    Matrix<double> A(n, n), B(n, n), C(n, n), R(n, n), a(n, n), b(n, n);
    fill_random_block(C.view(), 0, 0, 4, Stream::C, Fill::integer);
    std::copy(C.data(), C.data() + C.size(), R.data());
    e->hold_output(C.data(), n, n, n);
    for (int step = 0; step < 4; ++step) {
      fill_random_block(A.view(), 0, 0, 10 + step, Stream::A, Fill::integer);
      fill_random_block(B.view(), 0, 0, 10 + step, Stream::B, Fill::integer);
      std::copy(A.data(), A.data() + A.size(), a.data());
      std::copy(B.data(), B.data() + B.size(), b.data());
      e->gemm(Op::N, Op::N, n, n, n, 1.0, a.data(), n, b.data(), n, 1.0, C.data(), n);
      std::fill(a.data(), a.data() + a.size(), std::nan(""));  // the caller reuses its buffers
      std::fill(b.data(), b.data() + b.size(), std::nan(""));
      blas_gemm<double>(Op::N, Op::N, n, n, n, 1.0, A.data(), n, B.data(), n, 1.0, R.data(), n);
    }
    e->release_output();
    double d = 0;
    for (index_t t = 0; t < C.size(); ++t) d = std::max(d, std::abs(C.data()[t] - R.data()[t]));
    EXPECT_EQ(d, 0.0) << name;
  }
}
}  // namespace
