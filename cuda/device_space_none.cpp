// Built without CUDA: no GPU engine exists, so no run is device-resident.
#include "../mpi/runtime/device_space.hpp"

namespace distmm {

std::unique_ptr<DeviceSpace> make_device_space(Engine&, const Comm&, int) { return nullptr; }
int ranks_sharing_gpu(const Comm&) { return 1; }

}  // namespace distmm
