// `ozaki`: gpu-ozaki's INT8 Ozaki-II emulation on the host (cuda/ozaki_host.hpp: the same rule
// and arithmetic, integer loops instead of INT8 GEMMs), so that the accuracy targets run under
// every algorithm and on the emulated device without a GPU. Products the rule declines run in
// OpenBLAS. Slow (N integer products in plain loops): for tests and checks, not for timing.
#include "ozaki_engine.hpp"

#include <algorithm>

#include "../cuda/ozaki_host.hpp"
#include "../src/core/settings.hpp"
#include "blas.hpp"

namespace distmm {
namespace {

class OzakiHostEngine final : public EngineBase<OzakiHostEngine> {
 public:
  static constexpr DtypeSet kDtypes = DtypeSet::all();
  explicit OzakiHostEngine(const EngineOptions& o)
      : o_(o), accuracy_(ozaki::accuracy_or_throw(o.accuracy)) {
    blas_set_threads(o.threads);
  }
  std::string name() const override { return "ozaki"; }
  std::string describe() const override {
    return "ozaki (host twin of gpu-ozaki, integer loops, " +
           tally_.text(ozaki::accuracy_label(o_.accuracy, o_.moduli)) + ")";
  }
  template <class T>
  void run(Op ta, Op tb, index_t m, index_t n, index_t k, T alpha, const T* A, index_t lda, const T* B,
           index_t ldb, T beta, T* C, index_t ldc) {
    if (m <= 0 || n <= 0) return;
    if (k <= 0 || alpha == T(0)) {
      blas_gemm<T>(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
      return;
    }
    // k-chunks of one exact int32 sum each, accumulated through beta; a declined chunk runs in
    // OpenBLAS (each chunk's error is bounded by its own share of |A||B|).
    constexpr index_t chunk = 131056;
    const ozaki::LevelMode level = ozaki::level_mode(settings().emulation_level);  // (as gpu-ozaki takes it)
    bool all = true;
    for (index_t k0 = 0; k0 < k; k0 += chunk) {
      const index_t kc = std::min(chunk, k - k0);
      const T* Ak = A + (ta == Op::N ? k0 * lda : k0);
      const T* Bk = B + (tb == Op::N ? k0 : k0 * ldb);
      const T b = k0 == 0 ? beta : T(1);
      const ozaki::HostResult r =
          ozaki::host_gemm<T>(accuracy_, o_.moduli, 0, ta, tb, m, n, kc, alpha, Ak, lda, Bk, ldb, b, C, ldc, level);
      if (r.emulated()) {
        tally_.chose(r.choice);
        tally_.residue_levels += r.residue_level;
      } else {
        all = false;
        tally_.declined(r.choice.why);
        blas_gemm<T>(ta, tb, m, n, kc, alpha, Ak, lda, Bk, ldb, b, C, ldc);
      }
    }
    tally_.calls += all;
  }

 private:
  EngineOptions o_;
  ozaki::Accuracy accuracy_;
  ozaki::Tally tally_;
};

}  // namespace

EngineInfo ozaki_engine_info() {
  EngineInfo e = engine_entry<OzakiHostEngine>(
      "ozaki", "gpu-ozaki's INT8 emulation (Ozaki scheme II, moduli from --accuracy) on the host in integer loops: "
               "for tests and the emulated device, not for timing");
  e.emulated = true;
  return e;
}

}  // namespace distmm
