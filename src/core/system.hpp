// Facts about the machine this process runs on.
#pragma once
#include <cstddef>
#include <string>

namespace distmm {

std::size_t available_memory_bytes();  // MemAvailable, or physical memory when unknown
int hardware_threads();
std::size_t shared_cache_bytes();      // the largest cache level (L3 or L2)
std::size_t core_cache_bytes();        // the per-core L2
std::string host_name();
// "512M", "4G", "1.5GiB", "1000000" -> bytes; throws UsageError naming the flag.
std::size_t parse_bytes(const std::string& text, const std::string& flag);
std::string format_bytes(double bytes);

}  // namespace distmm
