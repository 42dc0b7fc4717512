// Every DISTMM_* environment variable, read in this one place: parsed strictly into typed values
// (sizes with units, integers and numbers within ranges, 0/1 switches, names from a list). A
// malformed value is a SettingError naming the variable, the value and what is accepted, never a
// silent default: "4G" read as 4 bytes, or "abc" as 0, once cost a 9x slower drop-in (issue 44).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "types.hpp"

namespace distmm {

// A DISTMM_* variable set to something it cannot mean: the CLI's one error line, exit 2.
struct SettingError : UsageError {
  using UsageError::UsageError;
};

// The strict parsers, one per kind of value; each throws SettingError naming `name`. Exposed for
// the unit tests and for the rare value that is not read from the environment.
namespace setting {
// "4G", "512M", "1.5G", "64KiB", "1000000" (bytes): at least one byte.
std::size_t bytes(const char* name, std::string_view text);
// Decimal digits with an optional '-', within [lo, hi].
long long integer(const char* name, std::string_view text, long long lo, long long hi);
// A finite decimal number ("0", "1.5e8") within [lo, hi].
double number(const char* name, std::string_view text, double lo, double hi);
// 0 or 1.
bool boolean(const char* name, std::string_view text);
// One of `accepted`, spelled exactly.
std::string choice(const char* name, std::string_view text, const std::vector<std::string>& accepted);
}  // namespace setting

// Tests: rank R reports F times its measured time to a balancer (DISTMM_KSPLIT_SKEW,
// DISTMM_CAPS_SKEW, written R:F).
struct Skew {
  int rank = -1;  // -1: none
  double factor = 1;
};

struct Settings {
  // The PDGEMM drop-in (mpi/pxgemm.cpp)
  // (these two are checked against their lists by check_named_settings, mpi/algorithm.hpp)
  std::string engine = "blas";                  // DISTMM_ENGINE: a name of engine_names()
  std::string algo = "auto";                    // DISTMM_ALGO: auto or an algorithm but scalapack
  std::string scalapack_direct = "1";           // DISTMM_SCALAPACK_DIRECT: 0, 1, force, ksplit
  index_t panel = 0;                            // DISTMM_PANEL: 0 (from the shape) or a width
  std::optional<int> threads;                   // DISTMM_THREADS: 1 to 4096
  std::optional<double> scalapack_min;          // DISTMM_SCALAPACK_MIN: m n k, >= 0
  int verbose = 0;                              // DISTMM_VERBOSE: 0 to 3
  std::string scalapack_stats;                  // DISTMM_SCALAPACK_STATS: a file ("": none)
  std::optional<std::size_t> mem_limit;         // DISTMM_MEM_LIMIT: bytes, with units
  bool ksplit_balance = true;                   // DISTMM_KSPLIT_BALANCE: 0 or 1
  Skew ksplit_skew;                             // DISTMM_KSPLIT_SKEW: R:F
  // The library's runs (the CLI's too)
  bool caps_balance = true;                     // DISTMM_CAPS_BALANCE: 0 or 1
  Skew caps_skew;                               // DISTMM_CAPS_SKEW: R:F
  bool device_comm_mpi = false;                 // DISTMM_DEVICE_COMM: auto or mpi
  bool emulation_profile = false;               // DISTMM_EMULATION_PROFILE: 0 or 1
  std::optional<std::size_t> emulation_workspace;  // DISTMM_EMULATION_WORKSPACE: bytes, with units
  std::string emulation_level = "auto";         // DISTMM_EMULATION_LEVEL: auto, 0, 1 or 2 (Winograd in the residues)
  std::optional<int> emulation_side_sms;        // DISTMM_EMULATION_SIDE_SMS: auto (unset) or 0 to 1024 (SMs left to the folds)
  std::string nccl;                             // DISTMM_NCCL: libnccl's path ("": search)
  std::string mpirun = "mpirun";                // DISTMM_MPIRUN: plan --ranks's launcher
};

// Every setting from `lookup` (null: unset), checked: the first malformed one throws.
Settings read_settings(const std::function<const char*(const char*)>& lookup);
// The process's settings from the environment as it is now: parsed at the first call and again
// whenever a DISTMM_* variable has changed (a malformed one throws at every call until fixed).
Settings settings();

// The variables read by settings() and by the path functions below (the ranks of a CLI run
// compare them: src/cli/launch_agreement.cpp).
const std::vector<std::string>& setting_names();

// The raw value of an environment variable (null: unset): the one place the environment is
// read. The per-user files' paths (DISTMM_MACHINE_FILE, DISTMM_TUNING_FILE, HOME) are checked
// where the files are (src/core/files.hpp's user_file_path).
const char* environment(const char* name);

}  // namespace distmm
