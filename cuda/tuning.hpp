// The tuning file: the best launch shape of the addition kernels per device, dtype and size,
// as found by `distmm tune` (tune.cu). Plain C++ (tuning_file.cpp), no CUDA types.
#pragma once
#include <string>

namespace distmm {

struct LaunchShape {
  int block_x = 256, block_y = 1;  // threads over rows x over columns
};

// The shape tuned for this device and dtype at the largest tuned size <= rows, or the default.
LaunchShape tuned_shape(const std::string& device, const std::string& dtype, long long rows);
// Records one tuned entry (read-modify-write of the JSON file, written atomically).
void record_tuned_shape(const std::string& path, const std::string& device,
                        const std::string& dtype, long long rows, LaunchShape s, double micros);

}  // namespace distmm
