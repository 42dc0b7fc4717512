// The dtype list's NCCL column: each type maps to the NCCL type of its real component, complex
// types count two components per element. Compiled where nccl.h is on the include path (CUDA
// builds); skipped otherwise.
#include <gtest/gtest.h>

#if __has_include(<nccl.h>)
#include "cuda/nccl_types.hpp"

TEST(NcclTypes, EveryDtypeHasItsRealComponentType) {
  using namespace distmm;
  EXPECT_EQ(nccl_type<float>(), ncclFloat32);
  EXPECT_EQ(nccl_type<double>(), ncclFloat64);
  EXPECT_EQ(nccl_type<std::complex<float>>(), ncclFloat32);
  EXPECT_EQ(nccl_type<std::complex<double>>(), ncclFloat64);
  EXPECT_EQ(nccl_components<float>, 1u);
  EXPECT_EQ(nccl_components<std::complex<double>>, 2u);
}
#else
TEST(NcclTypes, EveryDtypeHasItsRealComponentType) { GTEST_SKIP() << "nccl.h not on the include path"; }
#endif
