// NCCL datatypes of the dtype list (src/core/dtype.hpp). NCCL has no complex types: a complex
// element travels as two real components of its real type, so counts scale by
// nccl_components<T> (sums and copies are componentwise, hence exact for complex too).
#pragma once
#include <nccl.h>

#include <cstddef>

#include "../src/core/dtype.hpp"

namespace distmm {

template <class T>
ncclDataType_t nccl_type();
#define DISTMM_NCCL_TYPE(NAME, TYPE, REAL, LETTER, DESCR, MPI, NCCL) \
  template <>                                                        \
  inline ncclDataType_t nccl_type<TYPE>() {                          \
    return NCCL;                                                     \
  }
DISTMM_DTYPES(DISTMM_NCCL_TYPE)
#undef DISTMM_NCCL_TYPE

// Elements of nccl_type<T>() per element of T: 1 for real types, 2 for complex ones.
template <class T>
inline constexpr std::size_t nccl_components = sizeof(T) / sizeof(real_t<T>);

}  // namespace distmm
