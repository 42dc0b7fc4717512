// GPU engines against BLAS on the host: every GPU engine of the registry, levels 0 to 3, odd
// shapes, every dtype it supports (f32, f64; c32 and c64 for cublas and the Strassen-like
// engines), alpha/beta, transposes and conjugate transposes (integer inputs: exact). Skipped,
// visibly, where no GPU is seen.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>

#include "cuda/device_info.hpp"
#include "node/blas.hpp"
#include "node/engine.hpp"
#include "src/core/random.hpp"

using namespace distmm;

namespace {

#define REQUIRE_GPU()                                                                     \
  if (gpu_count() == 0)                                                                   \
    GTEST_SKIP() << "no GPU visible (" << gpu_summary() << "): GPU engine tests skipped"

// The registry's GPU engines (none without CUDA).
std::vector<const EngineInfo*> gpu_engines() {
  std::vector<const EngineInfo*> v;
  for (const EngineInfo& e : engine_registry())
    if (e.memory == Memory::device) v.push_back(&e);
  return v;
}
const char* const kRecursive[] = {"gpu-strassen", "gpu-strassen-lowmem", "gpu-winograd"};

// Max |engine - BLAS| over C = alpha op(A) op(B) + beta C; with `ref`, also max |BLAS|.
template <class T>
double max_diff(Engine& e, Op ta, Op tb, index_t m, index_t n, index_t k, T alpha, T beta,
                Fill fill, double* ref = nullptr) {
  Matrix<T> A(ta == Op::N ? m : k, ta == Op::N ? k : m), B(tb == Op::N ? k : n, tb == Op::N ? n : k);
  Matrix<T> C(m, n), R(m, n);
  fill_random_block(A.view(), 0, 0, 5, Stream::A, fill);
  fill_random_block(B.view(), 0, 0, 5, Stream::B, fill);
  fill_random_block(C.view(), 0, 0, 5, Stream::C, fill);
  fill_random_block(R.view(), 0, 0, 5, Stream::C, fill);
  e.gemm(ta, tb, m, n, k, alpha, A.data(), A.ld(), B.data(), B.ld(), beta, C.data(), C.ld());
  blas_gemm<T>(ta, tb, m, n, k, alpha, A.data(), A.ld(), B.data(), B.ld(), beta, R.data(), R.ld());
  double d = 0, r = 0;
  for (index_t t = 0; t < C.size(); ++t) {
    d = std::max(d, std::abs(std::complex<double>(C.data()[t]) - std::complex<double>(R.data()[t])));
    r = std::max(r, std::abs(std::complex<double>(R.data()[t])));
  }
  if (ref) *ref = r;
  return std::isnan(d) ? INFINITY : d;
}

TEST(GpuEngines, ExactOnIntegerInputs) {
  REQUIRE_GPU();
  const index_t shapes[][3] = {{1, 1, 1}, {17, 19, 23}, {64, 64, 64}, {1, 33, 40}, {127, 131, 129}, {256, 200, 300}};
  for (const EngineInfo* info : gpu_engines())
    for (int L = 0; L <= 3; ++L) {
      if (L > 0 && !info->recursive) break;
      EngineOptions o;
      o.levels = L;
      auto e = info->make(o);
      const std::string& name = info->name;
      for (const auto& s : shapes)
        for (Op ta : {Op::N, Op::T})
          for (Op tb : {Op::N, Op::T}) {
            EXPECT_EQ(max_diff<double>(*e, ta, tb, s[0], s[1], s[2], 2.0, -1.0, Fill::integer), 0.0)
                << name << " L=" << L << " " << s[0] << "x" << s[1] << "x" << s[2];
            EXPECT_EQ(max_diff<float>(*e, ta, tb, s[0], s[1], s[2], 1.f, 0.f, Fill::integer), 0.0)
                << name << " f32 L=" << L;
          }
      // Op::C on a real type is a transpose (gpu-tiled's kernel included).
      EXPECT_EQ(max_diff<double>(*e, Op::C, Op::C, 17, 19, 23, 1.0, 0.5, Fill::integer), 0.0) << name;
    }
}

// Complex products: cuBLAS's C and Z GEMMs, and the Strassen-like schedules with complex
// leaves (cuBLAS) and complex additions (real kernels over twice the rows), on odd shapes that
// peel at both levels, with transposes, conjugate transposes, and a beta that is neither 0 nor
// 1 (the complex scale kernel).
template <class T>
void complex_exact_case() {
  using Z = std::complex<double>;
  const std::pair<Op, Op> ops[] = {{Op::N, Op::N}, {Op::C, Op::T}, {Op::T, Op::C}, {Op::C, Op::N}, {Op::N, Op::C}};
  const std::pair<Z, Z> scalars[] = {{Z(1, 0), Z(0, 0)}, {Z(2, -1), Z(-1, 1)}, {Z(0, 1), Z(1, 0)}};
  std::vector<std::string> names{"cublas"};
  for (const char* n : kRecursive) names.push_back(n);
  for (const std::string& name : names)
    for (int L : {0, 2}) {
      if (L > 0 && name == "cublas") break;
      EngineOptions o;
      o.levels = L;
      o.cutoff = 2;
      auto e = make_engine(name, o);
      ASSERT_TRUE(e->dtypes().contains(dtype_of<T>())) << name;
      for (const auto& [ta, tb] : ops)
        for (const auto& [alpha, beta] : scalars) {
          const T a(real_t<T>(alpha.real()), real_t<T>(alpha.imag()));
          const T b(real_t<T>(beta.real()), real_t<T>(beta.imag()));
          EXPECT_EQ(max_diff<T>(*e, ta, tb, 37, 29, 41, a, b, Fill::integer), 0.0)
              << name << " " << DtypeTraits<T>::name << " L=" << L << " " << to_char(ta)
              << to_char(tb) << " alpha=" << alpha << " beta=" << beta;
        }
      EXPECT_EQ(e->levels_run(), L) << name;
    }
}
TEST(GpuEngines, ComplexExactOnIntegerInputs) {
  REQUIRE_GPU();
  complex_exact_case<std::complex<float>>();
  complex_exact_case<std::complex<double>>();
}

TEST(GpuEngines, UniformInputsWithinTheLevelBound) {
  REQUIRE_GPU();
  for (const char* name : kRecursive)
    for (int L = 1; L <= 3; ++L) {
      EngineOptions o;
      o.levels = L;
      auto e = make_engine(name, o);
      const index_t n = 512;
      double d = max_diff<float>(*e, Op::N, Op::N, n, n, n, 1.f, 0.f, Fill::uniform);
      const double per_level = std::string(name) == "gpu-winograd" ? 18.0 : 12.0;  // Higham 23.2.2
      EXPECT_LE(d / std::sqrt(double(n)), (n + 2) * 6e-8 * std::pow(per_level, L)) << name << " L=" << L;
      EXPECT_GT(d, 0.0) << name;
      EXPECT_EQ(e->error_growth(), std::pow(per_level, L)) << name;
    }
}

// Complex uniform inputs: max error relative to the largest entry within (k + 2) u 12^L.
template <class T>
void complex_uniform_case(const char* name, int L) {
  EngineOptions o;
  o.levels = L;
  auto e = make_engine(name, o);
  const index_t m = 200, n = 190, k = 210;
  double ref = 0;
  const double d = max_diff<T>(*e, Op::C, Op::N, m, n, k, T(1), T(0), Fill::uniform, &ref);
  const double u = DtypeTraits<T>::unit_roundoff * 1.01;
  EXPECT_LE(d / ref, (k + 2) * u * std::pow(12.0, L)) << name << " " << DtypeTraits<T>::name << " L=" << L;
  EXPECT_GT(d, 0.0) << name << " " << DtypeTraits<T>::name;
}
TEST(GpuEngines, ComplexUniformInputsWithinTheLevelBound) {
  REQUIRE_GPU();
  for (const char* name : kRecursive)
    for (int L = 1; L <= 2; ++L) {
      complex_uniform_case<std::complex<float>>(name, L);
      complex_uniform_case<std::complex<double>>(name, L);
    }
}

// The registry and the engines agree on the dtypes; a dtype an engine lacks is a clear error.
TEST(GpuEngines, DtypesMatchTheRegistryAndMissingOnesAreAClearError) {
  REQUIRE_GPU();
  ASSERT_EQ(gpu_engines().size(), 8u);
  for (const EngineInfo* info : gpu_engines()) {
    auto e = info->make({});
    EXPECT_EQ(e->dtypes().names(), info->dtypes.names()) << info->name;
    EXPECT_EQ(info->recursive, info->name != "cublas" && info->name != "gpu-tiled" && info->name != "gpu-ozaki")
        << info->name;
    EXPECT_EQ(info->emulated, info->name.find("ozaki") != std::string::npos) << info->name;
    EXPECT_FALSE(info->summary.empty()) << info->name;
  }
  EXPECT_EQ(engine_info("cublas").dtypes.names(), DtypeSet::all().names());
  EXPECT_EQ(engine_info("gpu-tiled").dtypes.names(), DtypeSet::real().names());
  auto tiled = make_engine("gpu-tiled", {});
  std::complex<double> z = 0;
  try {
    tiled->gemm(Op::N, Op::N, 1, 1, 1, std::complex<double>(1), &z, 1, &z, 1, std::complex<double>(0), &z, 1);
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "engine 'gpu-tiled' supports f32, f64, not c64: use --engine blas or another dtype");
  }
  EXPECT_THROW(tiled->hold_output(&z, 1, 1, 1), UsageError);
}

TEST(GpuEngines, UnknownWithoutGpuIsAClearError) {
  if (gpu_count() > 0) GTEST_SKIP() << "a GPU is visible";
  if (gpu_engines().empty()) GTEST_SKIP() << "built without CUDA";
  try {
    make_engine("gpu-winograd", {});
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--engine blas"), std::string::npos);
  }
}

}  // namespace

namespace {
// Cannon and SUMMA hold C on the GPU across their steps: the same calls with a held output must
// give the same result as without.
template <class T>
void held_output_case(const char* name) {
  auto e = make_engine(name, {});
  const index_t m = 70, n = 50, k = 30, ld = 73;
  Matrix<T> A(m, k), B(k, n), C(ld, n), R(ld, n);
  fill_random_block(A.view(), 0, 0, 9, Stream::A, Fill::integer);
  fill_random_block(B.view(), 0, 0, 9, Stream::B, Fill::integer);
  fill_random_block(C.view(), 0, 0, 9, Stream::C, Fill::integer);
  std::copy(C.data(), C.data() + C.size(), R.data());
  e->hold_output(C.data(), m, n, ld);
  for (int step = 0; step < 3; ++step)  // column halves, as gemm_with_progress cuts them
    for (index_t j0 : {index_t(0), n / 2}) {
      index_t nc = j0 == 0 ? n / 2 : n - n / 2;
      const T beta = step ? T(1) : T(0.5);
      e->gemm(Op::N, Op::N, m, nc, k, T(1), A.data(), m, B.data() + j0 * k, k, beta,
              C.data() + j0 * ld, ld);
      blas_gemm<T>(Op::N, Op::N, m, nc, k, T(1), A.data(), m, B.data() + j0 * k, k, beta,
                   R.data() + j0 * ld, ld);
    }
  e->release_output();
  double d = 0;
  for (index_t j = 0; j < n; ++j)
    for (index_t i = 0; i < m; ++i) d = std::max(d, double(std::abs(C(i, j) - R(i, j))));
  EXPECT_EQ(d, 0.0) << name << " " << DtypeTraits<T>::name;
}
TEST(GpuEngines, HeldOutputAcrossCalls) {
  REQUIRE_GPU();
  for (const char* name : {"cublas", "gpu-winograd"}) {
    held_output_case<double>(name);
    held_output_case<std::complex<float>>(name);
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
    auto e = make_engine(name, o);
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
