// The DISTMM_* settings parser: units, ranges, names, and garbage refused with the variable, the
// value and what is accepted named.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>

#include "mpi/algorithms/algorithm.hpp"
#include "src/core/settings.hpp"

using namespace distmm;

namespace {

// The message of the SettingError that `f` throws ("" when it throws none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const SettingError& e) {
    return e.what();
  }
  return "";
}

Settings from(const std::map<std::string, std::string>& env) {
  return read_settings([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

}  // namespace

TEST(Settings, SizesTakeUnits) {
  EXPECT_EQ(setting::bytes("DISTMM_MEM_LIMIT", "4G"), std::size_t(4) << 30);
  EXPECT_EQ(setting::bytes("DISTMM_MEM_LIMIT", "512M"), std::size_t(512) << 20);
  EXPECT_EQ(setting::bytes("DISTMM_MEM_LIMIT", "1.5G"), std::size_t(3) << 29);
  EXPECT_EQ(setting::bytes("DISTMM_MEM_LIMIT", "64KiB"), std::size_t(64) << 10);
  EXPECT_EQ(setting::bytes("DISTMM_MEM_LIMIT", "1000000"), std::size_t(1000000));
  EXPECT_EQ(from({{"DISTMM_MEM_LIMIT", "4G"}}).mem_limit, std::size_t(4) << 30);
}

TEST(Settings, SizeGarbageNamesTheVariable) {
  for (const char* bad : {"abc", "", "4X", "-4G", "0", "0.1", " 4G", "4G ", "0x10", "inf", "nan", "1e30T", "4 G"}) {
    const std::string e = error_of([&] { setting::bytes("DISTMM_MEM_LIMIT", bad); });
    EXPECT_NE(e.find("DISTMM_MEM_LIMIT='" + std::string(bad) + "'"), std::string::npos) << bad << ": " << e;
    EXPECT_NE(e.find("e.g. 4G"), std::string::npos) << e;
  }
}

TEST(Settings, IntegersWithinRanges) {
  EXPECT_EQ(setting::integer("DISTMM_THREADS", "8", 1, 4096), 8);
  EXPECT_EQ(setting::integer("DISTMM_THREADS", "4096", 1, 4096), 4096);
  for (const char* bad : {"0", "4097", "-1", "abc", "", "8x", "+8", " 8", "1.5", "99999999999999999999"})
    EXPECT_NE(error_of([&] { setting::integer("DISTMM_THREADS", bad, 1, 4096); }).find("an integer from 1 to 4096"),
              std::string::npos)
        << bad;
  EXPECT_EQ(from({{"DISTMM_PANEL", "0"}}).panel, 0);
  EXPECT_EQ(from({{"DISTMM_PANEL", "512"}}).panel, 512);
  EXPECT_NE(error_of([] { from({{"DISTMM_PANEL", "-3"}}); }).find("DISTMM_PANEL='-3'"), std::string::npos);
  EXPECT_NE(error_of([] { from({{"DISTMM_VERBOSE", "4"}}); }).find("0 to 3"), std::string::npos);
  EXPECT_EQ(from({{"DISTMM_VERBOSE", "2"}}).verbose, 2);
}

TEST(Settings, NumbersAreFiniteAndInRange) {
  EXPECT_EQ(setting::number("DISTMM_KSPLIT_SKEW", "0.5", 0, 1), 0.5);
  EXPECT_NE(error_of([] { setting::number("DISTMM_X", "2", 0, 1); }).find("a number from 0 to 1"), std::string::npos);
  EXPECT_EQ(from({{"DISTMM_SCALAPACK_MIN", "1.5e8"}}).scalapack_min, 1.5e8);
  EXPECT_NE(error_of([] { from({{"DISTMM_SCALAPACK_MIN", "x"}}); }).find("use a finite number from 0, or unset"),
            std::string::npos);
  EXPECT_EQ(from({{"DISTMM_SCALAPACK_MIN", "134217728"}}).scalapack_min, 134217728.0);
  for (const char* bad : {"abc", "", "-1", "inf", "nan", "1e400", "1,5", "2^27"})
    EXPECT_NE(error_of([&] { from({{"DISTMM_SCALAPACK_MIN", bad}}); }).find("DISTMM_SCALAPACK_MIN='" + std::string(bad)),
              std::string::npos)
        << bad;
}

TEST(Settings, SwitchesAreZeroOrOne) {
  EXPECT_FALSE(from({{"DISTMM_KSPLIT_BALANCE", "0"}}).ksplit_balance);
  EXPECT_TRUE(from({{"DISTMM_CAPS_BALANCE", "1"}}).caps_balance);
  EXPECT_TRUE(from({{"DISTMM_EMULATION_PROFILE", "1"}}).emulation_profile);
  for (const char* bad : {"yes", "true", "", "2", "off"})
    EXPECT_NE(error_of([&] { from({{"DISTMM_CAPS_BALANCE", bad}}); }).find("use 0 or 1"), std::string::npos) << bad;
}

TEST(Settings, NamesFromTheirLists) {
  const Settings s = from({{"DISTMM_ALGO", "summa"}, {"DISTMM_ENGINE", "winograd"}, {"DISTMM_SCALAPACK_DIRECT", "ksplit"},
                           {"DISTMM_DEVICE_COMM", "mpi"}});
  EXPECT_EQ(s.algo, "summa");
  EXPECT_EQ(s.engine, "winograd");
  EXPECT_EQ(s.scalapack_direct, "ksplit");
  EXPECT_TRUE(s.device_comm_mpi);
  EXPECT_EQ(from({}).emulation_level, "auto");
  EXPECT_EQ(from({{"DISTMM_EMULATION_LEVEL", "0"}}).emulation_level, "0");
  EXPECT_EQ(from({{"DISTMM_EMULATION_LEVEL", "2"}}).emulation_level, "2");
  EXPECT_NE(error_of([] { from({{"DISTMM_EMULATION_LEVEL", "3"}}); }).find("DISTMM_EMULATION_LEVEL='3'"), std::string::npos);
  EXPECT_FALSE(from({}).emulation_side_sms);
  EXPECT_FALSE(from({{"DISTMM_EMULATION_SIDE_SMS", "auto"}}).emulation_side_sms);
  EXPECT_EQ(from({{"DISTMM_EMULATION_SIDE_SMS", "0"}}).emulation_side_sms, 0);
  EXPECT_NE(error_of([] { from({{"DISTMM_EMULATION_SIDE_SMS", "-1"}}); }).find("DISTMM_EMULATION_SIDE_SMS='-1'"),
            std::string::npos);
  // ScaLAPACK cannot answer its own P?GEMM through the drop-in.
  const std::string algo = error_of([] { check_named_settings(from({{"DISTMM_ALGO", "scalapack"}})); });
  EXPECT_NE(algo.find("DISTMM_ALGO='scalapack' is not valid: use auto, summa"), std::string::npos) << algo;
  EXPECT_NE(error_of([] { check_named_settings(from({{"DISTMM_ENGINE", "fast"}})); }).find("blas"), std::string::npos);
  EXPECT_NE(error_of([] { check_named_settings(from({{"DISTMM_ENGINE", ""}})); }).find("DISTMM_ENGINE=''"),
            std::string::npos);
  EXPECT_NE(error_of([] { from({{"DISTMM_SCALAPACK_DIRECT", "yes"}}); }).find("0, 1, force or ksplit"),
            std::string::npos);
  EXPECT_NE(error_of([] { from({{"DISTMM_DEVICE_COMM", "nccl2"}}); }).find("auto or mpi"), std::string::npos);
}

TEST(Settings, SkewIsRankColonFactor) {
  const Settings s = from({{"DISTMM_KSPLIT_SKEW", "3:50"}, {"DISTMM_CAPS_SKEW", "0:0.5"}});
  EXPECT_EQ(s.ksplit_skew.rank, 3);
  EXPECT_EQ(s.ksplit_skew.factor, 50.0);
  EXPECT_EQ(s.caps_skew.rank, 0);
  EXPECT_EQ(s.caps_skew.factor, 0.5);
  for (const char* bad : {"3", "3:", ":50", "-1:2", "a:b", "3:0", "3:-2", "3:inf"})
    EXPECT_NE(error_of([&] { from({{"DISTMM_KSPLIT_SKEW", bad}}); }).find("DISTMM_KSPLIT_SKEW"), std::string::npos)
        << bad;
}

TEST(Settings, DefaultsWhenUnset) {
  const Settings s = from({});
  EXPECT_EQ(s.engine, "blas");
  EXPECT_EQ(s.algo, "auto");
  EXPECT_EQ(s.scalapack_direct, "1");
  EXPECT_FALSE(s.mem_limit);
  EXPECT_FALSE(s.threads);
  EXPECT_FALSE(s.scalapack_min);
  EXPECT_TRUE(s.ksplit_balance);
  EXPECT_EQ(s.ksplit_skew.rank, -1);
  EXPECT_EQ(s.mpirun, "mpirun");
  EXPECT_NE(error_of([] { from({{"DISTMM_MPIRUN", ""}}); }).find("DISTMM_MPIRUN is empty"), std::string::npos);
}

TEST(Settings, EveryNamedVariableIsRead) {
  // A garbage value in each checked variable is refused (paths are taken as given).
  for (const std::string& name : setting_names()) {
    if (name == "DISTMM_SCALAPACK_STATS" || name == "DISTMM_NCCL" || name == "DISTMM_MACHINE_FILE" ||
        name == "DISTMM_TUNING_FILE" || name == "DISTMM_MPIRUN")
      continue;
    const std::string e = error_of([&] { check_named_settings(from({{name, "garbage!"}})); });
    EXPECT_NE(e.find(name + "='garbage!' is not valid"), std::string::npos) << name << ": " << e;
  }
}

TEST(Settings, ReadAgainWhenTheEnvironmentChanges) {
  // Programs (and the CAPS tests) set a variable between runs: the next read sees it.
  ::setenv("DISTMM_CAPS_BALANCE", "0", 1);
  EXPECT_FALSE(settings().caps_balance);
  ::setenv("DISTMM_CAPS_BALANCE", "1", 1);
  EXPECT_TRUE(settings().caps_balance);
  ::setenv("DISTMM_CAPS_BALANCE", "x", 1);
  EXPECT_THROW(settings(), SettingError);
  EXPECT_THROW(settings(), SettingError);  // again, until fixed
  ::unsetenv("DISTMM_CAPS_BALANCE");
  EXPECT_TRUE(settings().caps_balance);
}
