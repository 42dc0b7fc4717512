#include "system.hpp"

#include <unistd.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "types.hpp"

namespace distmm {

std::size_t available_memory_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  std::size_t kb;
  std::string unit;
  while (f >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<std::size_t>(pages) * page : (std::size_t{1} << 32);
}

int hardware_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n ? static_cast<int>(n) : 1;
}

namespace {
std::size_t read_cache(int level_wanted) {
  std::size_t best = 0;
  for (int idx = 0; idx < 8; ++idx) {
    std::string base = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(idx) + "/";
    std::ifstream lv(base + "level"), sz(base + "size"), ty(base + "type");
    int level;
    std::string size, type;
    if (!(lv >> level) || !(sz >> size) || !(ty >> type)) continue;
    if (type == "Instruction") continue;
    std::size_t bytes = std::stoull(size);
    if (!size.empty() && size.back() == 'K') bytes *= 1024;
    if (!size.empty() && size.back() == 'M') bytes *= 1024 * 1024;
    if (level_wanted == 0 ? bytes > best : level == level_wanted) best = std::max(best, bytes);
  }
  return best;
}
}  // namespace

std::size_t shared_cache_bytes() {
  std::size_t b = read_cache(0);
#ifdef _SC_LEVEL3_CACHE_SIZE
  if (!b) b = static_cast<std::size_t>(std::max(0L, sysconf(_SC_LEVEL3_CACHE_SIZE)));
#endif
  return b ? b : (std::size_t{8} << 20);
}

std::size_t core_cache_bytes() {
  std::size_t b = read_cache(2);
#ifdef _SC_LEVEL2_CACHE_SIZE
  if (!b) b = static_cast<std::size_t>(std::max(0L, sysconf(_SC_LEVEL2_CACHE_SIZE)));
#endif
  return b ? b : (std::size_t{1} << 20);
}

std::string host_name() {
  char buf[256] = {0};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

std::size_t parse_bytes(const std::string& text, const std::string& flag) {
  // A decimal number first (from_chars takes no blanks, signs or hex, unlike stod), then a unit.
  double v = 0;
  const char* end = text.data();
  if (!text.empty() && (std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.')) {
    const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
    if (r.ec == std::errc()) end = r.ptr;
  }
  const std::size_t pos = static_cast<std::size_t>(end - text.data());
  std::string unit = text.substr(pos);
  double mult = 0;
  if (unit.empty() || unit == "B") mult = 1;
  else if (unit == "K" || unit == "KB" || unit == "KiB") mult = 1024.0;
  else if (unit == "M" || unit == "MB" || unit == "MiB") mult = 1024.0 * 1024;
  else if (unit == "G" || unit == "GB" || unit == "GiB") mult = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "TB" || unit == "TiB") mult = 1024.0 * 1024 * 1024 * 1024;
  if (pos == 0 || mult == 0 || !(v * mult >= 1) || !std::isfinite(v))
    throw UsageError(flag + " '" + text + "' is not a size: use e.g. 512M or 4G");
  if (v * mult >= 0x1p62)  // beyond any machine's memory, and beyond size_t arithmetic's reach
    throw UsageError(flag + " '" + text + "' is too large: use e.g. 512M or 4G");
  return static_cast<std::size_t>(v * mult);
}

std::string format_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (b >= 1024 && u < 5) b /= 1024, ++u;
  char buf[64];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", b, units[u]);
  return buf;
}

}  // namespace distmm
