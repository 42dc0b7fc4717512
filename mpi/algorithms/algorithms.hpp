// Factories of the distributed algorithms, one file each: summa.cpp, cannon.cpp, dns.cpp,
// scalapack.cpp, caps.cpp, cuboid.cpp.
#pragma once
#include "algorithm.hpp"

namespace distmm {

std::unique_ptr<DistAlgorithm> make_summa(const Comm& world, GemmShape s, const AlgoOptions& o);
std::unique_ptr<DistAlgorithm> make_cannon(const Comm& world, GemmShape s, const AlgoOptions& o);
std::unique_ptr<DistAlgorithm> make_dns(const Comm& world, GemmShape s, const AlgoOptions& o);
std::unique_ptr<DistAlgorithm> make_scalapack(const Comm& world, GemmShape s, const AlgoOptions& o);
std::unique_ptr<DistAlgorithm> make_caps(const Comm& world, GemmShape s, const AlgoOptions& o);
std::unique_ptr<DistAlgorithm> make_cuboid(const Comm& world, GemmShape s, const AlgoOptions& o);
// --algo auto for a device-resident run (auto_device.cpp): the candidates, CAPS's dealt steps
// among them, priced by the machine model's device section.
std::unique_ptr<DistAlgorithm> make_auto_device(const Comm& world, GemmShape s, const AlgoOptions& o);

}  // namespace distmm
