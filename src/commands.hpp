// The small commands beside `run`.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "types.hpp"

namespace distmm {

int info_command(std::ostream& os, int rank);

struct AccuracyOptions {
  index_t n = 512;
  std::string dtype = "f32";
  int max_levels = 3;
  int threads = 1;
  std::vector<std::string> engines{"blas", "strassen", "strassen-lowmem", "winograd"};
};
int accuracy_command(const AccuracyOptions& o, std::ostream& os, int rank);

}  // namespace distmm
