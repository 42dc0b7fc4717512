// The dtype list and its traits: names, sizes, BLAS letters, NumPy descrs, parsing and dispatch.
#include <gtest/gtest.h>

#include "src/core/dtype.hpp"
#include "src/core/npy.hpp"

using namespace distmm;

TEST(Dtype, TraitsOfEveryListedType) {
  EXPECT_EQ(kAllDtypes.size(), 4u);
  EXPECT_EQ(dtype_names(), "f32, f64, c32, c64");
  EXPECT_EQ(size_of(Dtype::f32), 4u);
  EXPECT_EQ(size_of(Dtype::c64), 16u);
  EXPECT_EQ(info(Dtype::c32).blas_letter, 'c');
  EXPECT_STREQ(info(Dtype::c64).numpy_descr, "<c16");
  EXPECT_TRUE(is_complex(Dtype::c32));
  EXPECT_FALSE(is_complex(Dtype::f64));
  EXPECT_EQ(unit_roundoff(Dtype::c32), unit_roundoff(Dtype::f32));
  EXPECT_EQ(unit_roundoff(Dtype::f64), 0x1p-53);
  static_assert(dtype_of<std::complex<double>>() == Dtype::c64);
  static_assert(std::is_same_v<real_t<std::complex<float>>, float>);
}

TEST(Dtype, ParseAndDispatchRoundTrip) {
  for (Dtype d : kAllDtypes) {
    EXPECT_EQ(parse_dtype(to_string(d)), d);
    EXPECT_EQ(parse_dtype(info(d).numpy_descr, true), d);
    EXPECT_EQ(npy_dtype(info(d).numpy_descr), d);
    const std::size_t size = dispatch(d, [](auto tag) { return sizeof(typename decltype(tag)::type); });
    EXPECT_EQ(size, size_of(d));
  }
  EXPECT_FALSE(parse_dtype("f16"));
  EXPECT_THROW(npy_dtype("<i8"), NpyError);
  EXPECT_THROW(npy_dtype(">c16"), NpyError);
}

TEST(Dtype, SetsNameTheirMembers) {
  EXPECT_EQ(DtypeSet::real().names(), "f32, f64");
  EXPECT_TRUE(DtypeSet::all().contains(Dtype::c64));
  EXPECT_FALSE(DtypeSet::real().contains(Dtype::c32));
}
