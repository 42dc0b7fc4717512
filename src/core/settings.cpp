#include "settings.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>

#include "system.hpp"

namespace distmm {

namespace setting {
namespace {

[[noreturn]] void refuse(const char* name, std::string_view text, const std::string& accepted) {
  throw SettingError(std::string(name) + "='" + std::string(text) + "' is not valid: use " + accepted +
                     ", or unset it");
}

std::string range_text(long long lo, long long hi) { return std::to_string(lo) + " to " + std::to_string(hi); }

}  // namespace

std::size_t bytes(const char* name, std::string_view text) {
  try {
    return parse_bytes(std::string(text), name);
  } catch (const UsageError&) {
    refuse(name, text, "a size in bytes, e.g. 4G, 512M, 1.5G or 1000000");
  }
}

long long integer(const char* name, std::string_view text, long long lo, long long hi) {
  long long v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi)
    refuse(name, text, "an integer from " + range_text(lo, hi));
  return v;
}

double number(const char* name, std::string_view text, double lo, double hi) {
  double v = 0;
  // from_chars takes no leading '+', no whitespace, no hex without being asked, no "inf"
  // unless spelled so, which isfinite then refuses.
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v) || v < lo ||
      v > hi) {
    char range[96];
    if (hi == std::numeric_limits<double>::max())
      std::snprintf(range, sizeof range, "a finite number from %g", lo);
    else
      std::snprintf(range, sizeof range, "a number from %g to %g", lo, hi);
    refuse(name, text, range);
  }
  return v;
}

bool boolean(const char* name, std::string_view text) {
  if (text == "0" || text == "1") return text == "1";
  refuse(name, text, "0 or 1");
}

std::string choice(const char* name, std::string_view text, const std::vector<std::string>& accepted) {
  for (const std::string& a : accepted)
    if (text == a) return a;
  std::string list;
  for (std::size_t i = 0; i < accepted.size(); ++i)
    list += (i == 0 ? "" : i + 1 == accepted.size() ? " or " : ", ") + accepted[i];
  refuse(name, text, list);
}

}  // namespace setting

namespace {

// R:F, rank R >= 0 and factor F > 0.
Skew skew(const char* name, std::string_view text) {
  const auto colon = text.find(':');
  try {
    if (colon == std::string_view::npos) throw SettingError("no colon");
    Skew s;
    s.rank = static_cast<int>(setting::integer(name, text.substr(0, colon), 0, 1 << 30));
    s.factor = setting::number(name, text.substr(colon + 1), 1e-6, 1e6);
    return s;
  } catch (const SettingError&) {  // named with the whole value, not the part
    throw SettingError(std::string(name) + "='" + std::string(text) +
                       "' is not valid: use RANK:FACTOR (a rank from 0, a factor from 1e-06 to 1e+06), e.g. 3:50, "
                       "or unset it");
  }
}

}  // namespace

const std::vector<std::string>& setting_names() {
  static const std::vector<std::string> names = {
      "DISTMM_ENGINE",       "DISTMM_ALGO",          "DISTMM_SCALAPACK_DIRECT", "DISTMM_PANEL",
      "DISTMM_THREADS",      "DISTMM_SCALAPACK_MIN", "DISTMM_VERBOSE",          "DISTMM_SCALAPACK_STATS",
      "DISTMM_MEM_LIMIT",    "DISTMM_KSPLIT_BALANCE", "DISTMM_KSPLIT_SKEW",     "DISTMM_CAPS_BALANCE",
      "DISTMM_CAPS_SKEW",    "DISTMM_DEVICE_COMM",   "DISTMM_EMULATION_PROFILE", "DISTMM_EMULATION_WORKSPACE", "DISTMM_EMULATION_LEVEL",
      "DISTMM_EMULATION_SIDE_SMS", "DISTMM_NCCL",
      "DISTMM_MACHINE_FILE", "DISTMM_TUNING_FILE",   "DISTMM_MPIRUN"};
  return names;
}

Settings read_settings(const std::function<const char*(const char*)>& lookup) {
  Settings s;
  // Each variable's value when it is set; an empty value is a value (and mostly a mistake).
  auto with = [&](const char* name, auto&& use) {
    if (const char* v = lookup(name)) use(name, std::string_view(v));
  };
  // Names from lists that live above this floor: checked by check_named_settings (mpi/).
  with("DISTMM_ENGINE", [&](const char*, std::string_view v) { s.engine = std::string(v); });
  with("DISTMM_ALGO", [&](const char*, std::string_view v) { s.algo = std::string(v); });
  with("DISTMM_SCALAPACK_DIRECT", [&](const char* n, std::string_view v) {
    s.scalapack_direct = setting::choice(n, v, {"0", "1", "force", "ksplit"});
  });
  with("DISTMM_PANEL", [&](const char* n, std::string_view v) { s.panel = setting::integer(n, v, 0, INT32_MAX); });
  with("DISTMM_THREADS", [&](const char* n, std::string_view v) { s.threads = int(setting::integer(n, v, 1, 4096)); });
  with("DISTMM_SCALAPACK_MIN", [&](const char* n, std::string_view v) { s.scalapack_min = setting::number(n, v, 0, std::numeric_limits<double>::max()); });
  with("DISTMM_VERBOSE", [&](const char* n, std::string_view v) { s.verbose = int(setting::integer(n, v, 0, 3)); });
  with("DISTMM_SCALAPACK_STATS", [&](const char*, std::string_view v) { s.scalapack_stats = v; });
  with("DISTMM_MEM_LIMIT", [&](const char* n, std::string_view v) { s.mem_limit = setting::bytes(n, v); });
  with("DISTMM_KSPLIT_BALANCE", [&](const char* n, std::string_view v) { s.ksplit_balance = setting::boolean(n, v); });
  with("DISTMM_KSPLIT_SKEW", [&](const char* n, std::string_view v) { s.ksplit_skew = skew(n, v); });
  with("DISTMM_CAPS_BALANCE", [&](const char* n, std::string_view v) { s.caps_balance = setting::boolean(n, v); });
  with("DISTMM_CAPS_SKEW", [&](const char* n, std::string_view v) { s.caps_skew = skew(n, v); });
  with("DISTMM_DEVICE_COMM", [&](const char* n, std::string_view v) {
    s.device_comm_mpi = setting::choice(n, v, {"auto", "mpi"}) == "mpi";
  });
  with("DISTMM_EMULATION_PROFILE", [&](const char* n, std::string_view v) { s.emulation_profile = setting::boolean(n, v); });
  with("DISTMM_EMULATION_WORKSPACE", [&](const char* n, std::string_view v) { s.emulation_workspace = setting::bytes(n, v); });
  with("DISTMM_EMULATION_LEVEL", [&](const char* n, std::string_view v) {
    s.emulation_level = setting::choice(n, v, {"auto", "0", "1", "2"});
  });
  with("DISTMM_EMULATION_SIDE_SMS", [&](const char* n, std::string_view v) {
    if (v != "auto") s.emulation_side_sms = int(setting::integer(n, v, 0, 1024));
  });
  with("DISTMM_NCCL", [&](const char*, std::string_view v) { s.nccl = v; });
  with("DISTMM_MPIRUN", [&](const char* n, std::string_view v) {
    if (v.empty()) throw SettingError(std::string(n) + " is empty: name the MPI launcher (e.g. mpirun), or unset it");
    s.mpirun = v;
  });
  return s;
}

Settings settings() {
  // Parsed again only when a variable changed since the last call: a program (or a test) may set
  // one between runs, as it could when each place read its own.
  static std::mutex guard;
  static std::vector<std::optional<std::string>> seen;
  static std::optional<Settings> parsed;
  std::vector<std::optional<std::string>> now;
  for (const std::string& name : setting_names())
    if (const char* v = environment(name.c_str())) now.emplace_back(v);
    else now.emplace_back();
  const std::lock_guard<std::mutex> lock(guard);
  if (!parsed || now != seen) {
    parsed = read_settings(environment);  // throws: nothing kept
    seen = std::move(now);
  }
  return *parsed;
}

const char* environment(const char* name) { return std::getenv(name); }

}  // namespace distmm
