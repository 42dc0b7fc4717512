// The element types distmm multiplies, declared once (BLIS's idea: one type list generates the
// typed API). Every place that chooses between element types goes through this list: the
// Dtype enum, the traits below, dispatch(), the MPI and NCCL datatypes (mpi/comm.hpp,
// cuda/nccl_types.hpp) and the explicit instantiations (DISTMM_FOR_EACH_TYPE).
//
// Adding a type is one row here plus the kernels that do not exist for it yet.
#pragma once
#include <array>
#include <complex>
#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

// X(name, C++ type, real component type, BLAS letter, NumPy descr, MPI datatype,
//   NCCL datatype of one real component). The last two are tokens that only the layers that
// include mpi.h / nccl.h expand.
#define DISTMM_DTYPES_WITH(X, A)                                                           \
  X(A, f32, float, float, 's', "<f4", MPI_FLOAT, ncclFloat32)                              \
  X(A, f64, double, double, 'd', "<f8", MPI_DOUBLE, ncclFloat64)                           \
  X(A, c32, std::complex<float>, float, 'c', "<c8", MPI_C_FLOAT_COMPLEX, ncclFloat32)      \
  X(A, c64, std::complex<double>, double, 'z', "<c16", MPI_C_DOUBLE_COMPLEX, ncclFloat64)

// DISTMM_DTYPES(X) calls X(name, type, real, letter, descr, mpi, nccl) for every row;
// DISTMM_FOR_EACH_TYPE(M) calls M(type), e.g. for explicit template instantiations.
#define DISTMM_DTYPES(X) DISTMM_DTYPES_WITH(DISTMM_DTYPE_ROW_, X)
#define DISTMM_DTYPE_ROW_(X, ...) X(__VA_ARGS__)
#define DISTMM_FOR_EACH_TYPE(M) DISTMM_DTYPES_WITH(DISTMM_DTYPE_TYPE_, M)
#define DISTMM_DTYPE_TYPE_(M, NAME, TYPE, ...) M(TYPE)

namespace distmm {

enum class Dtype {
#define DISTMM_ENUM(name, ...) name,
  DISTMM_DTYPES(DISTMM_ENUM)
#undef DISTMM_ENUM
};

inline constexpr std::array kAllDtypes = {
#define DISTMM_ALL(name, ...) Dtype::name,
    DISTMM_DTYPES(DISTMM_ALL)
#undef DISTMM_ALL
};

template <class T>
struct DtypeTraits;  // defined for the listed types only

#define DISTMM_TRAITS(NAME, TYPE, REAL, LETTER, DESCR, MPI, NCCL)                            \
  template <>                                                                              \
  struct DtypeTraits<TYPE> {                                                               \
    using real = REAL;                                                                     \
    static constexpr Dtype dtype = Dtype::NAME;                                            \
    static constexpr const char* name = #NAME;                                             \
    static constexpr char blas_letter = LETTER;                                            \
    static constexpr const char* numpy_descr = DESCR;                                      \
    static constexpr bool is_complex = !std::is_same_v<TYPE, REAL>;                        \
    /* unit roundoff u = eps / 2 of the real component (complex products: Higham 3.6) */  \
    static constexpr double unit_roundoff = std::numeric_limits<REAL>::epsilon() / 2;      \
  };
DISTMM_DTYPES(DISTMM_TRAITS)
#undef DISTMM_TRAITS

template <class T>
constexpr Dtype dtype_of() {
  return DtypeTraits<T>::dtype;
}
template <class T>
inline constexpr bool is_complex_v = DtypeTraits<T>::is_complex;
template <class T>
using real_t = typename DtypeTraits<T>::real;

// A type carried as a value: dispatch() hands one to its callable.
template <class T>
struct TypeTag {
  using type = T;
};
// T in a parameter that must not take part in deduction (C++20's std::type_identity_t; the
// CUDA sources compile as C++17).
template <class T>
using nondeduced_t = typename TypeTag<T>::type;

// Calls f(TypeTag<T>{}) with the C++ type of `d`; every branch must return the same type.
template <class F>
decltype(auto) dispatch(Dtype d, F&& f) {
  switch (d) {
#define DISTMM_CASE(NAME, TYPE, ...) \
  case Dtype::NAME:                  \
    return f(TypeTag<TYPE>{});
    DISTMM_DTYPES(DISTMM_CASE)
#undef DISTMM_CASE
  }
  return f(TypeTag<double>{});  // unreachable: every enumerator has a case
}

// Facts about a runtime Dtype, read from the traits.
struct DtypeInfo {
  const char* name;
  std::size_t size;
  char blas_letter;
  const char* numpy_descr;
  bool is_complex;
  double unit_roundoff;
};
inline DtypeInfo info(Dtype d) {
  return dispatch(d, [](auto tag) {
    using T = typename decltype(tag)::type;
    using Tr = DtypeTraits<T>;
    return DtypeInfo{Tr::name, sizeof(T), Tr::blas_letter, Tr::numpy_descr, Tr::is_complex,
                     Tr::unit_roundoff};
  });
}
inline const char* to_string(Dtype d) { return info(d).name; }
inline std::size_t size_of(Dtype d) { return info(d).size; }
inline bool is_complex(Dtype d) { return info(d).is_complex; }
inline double unit_roundoff(Dtype d) { return info(d).unit_roundoff; }

// "f64" -> Dtype::f64 (and by NumPy descr: "<c16" -> Dtype::c64 with by_descr).
inline std::optional<Dtype> parse_dtype(std::string_view s, bool by_descr = false) {
  for (Dtype d : kAllDtypes)
    if (s == (by_descr ? info(d).numpy_descr : info(d).name)) return d;
  return std::nullopt;
}

// "f32, f64, c32, c64": the names of the listed types.
inline std::string dtype_names(const char* sep = ", ") {
  std::string s;
  for (Dtype d : kAllDtypes) s += (s.empty() ? "" : sep) + std::string(to_string(d));
  return s;
}

// A set of dtypes (what an engine supports).
class DtypeSet {
 public:
  constexpr DtypeSet() = default;
  constexpr DtypeSet(std::initializer_list<Dtype> ds) {
    for (Dtype d : ds) bits_ |= 1u << static_cast<unsigned>(d);
  }
  static constexpr DtypeSet all() {
    DtypeSet s;
    for (Dtype d : kAllDtypes) s.bits_ |= 1u << static_cast<unsigned>(d);
    return s;
  }
  static constexpr DtypeSet real() { return {Dtype::f32, Dtype::f64}; }
  constexpr bool contains(Dtype d) const { return bits_ >> static_cast<unsigned>(d) & 1u; }
  std::string names() const {
    std::string s;
    for (Dtype d : kAllDtypes)
      if (contains(d)) s += (s.empty() ? "" : ", ") + std::string(to_string(d));
    return s;
  }

 private:
  unsigned bits_ = 0;
};

}  // namespace distmm

