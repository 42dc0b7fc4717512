// libFuzzer target for the .npy header parser: any bytes must either parse into a header whose
// fields are consistent, or raise NpyError; never crash, hang or read out of bounds (ASan, UBSan).
// A parsed 2-D header must also survive a round trip through make_npy_header.
#include <cstdint>
#include <cstdlib>

#include "src/core/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace distmm;
  NpyHeader h;
  try {
    h = parse_npy_header(data, size);
  } catch (const NpyError&) {
    return 0;
  }
  if (h.data_offset > size) std::abort();
  if (h.shape.size() == 2 && (h.descr == "<f4" || h.descr == "<f8") && h.shape[0] < (1LL << 40) &&
      h.shape[1] < (1LL << 40)) {
    Dtype dt = npy_dtype(h.descr);
    std::string again = make_npy_header(dt, h.shape[0], h.shape[1], h.fortran_order);
    NpyHeader r = parse_npy_header(reinterpret_cast<const std::uint8_t*>(again.data()), again.size());
    if (r.shape != h.shape || r.fortran_order != h.fortran_order || r.descr != h.descr) std::abort();
    if (r.data_offset % 64 != 0) std::abort();
  }
  return 0;
}
