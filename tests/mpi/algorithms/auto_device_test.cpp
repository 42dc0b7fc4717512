// --algo auto on a device (auto_device.cpp) under hand-made GPU models (the machine file's device
// section): slow multiplies and fast memory choose CAPS, its dealt steps included, but not leaves
// too small for the engine's measured rate; a slow link the plan of the fewest words; no
// measured device model, no CAPS. Then plan = run on the emulated device. (make_algorithm plans
// only: nothing is multiplied there.)
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <limits>

#include "mpi/algorithms/algorithms.hpp"
#include "mpi/algorithms/cost_model.hpp"
#include "mpi/run/run_plan.hpp"
#include "mpi_test_util.hpp"

using namespace distmm;

namespace {

std::string model_path(const Comm& world) {
  long long id = world.rank() == 0 ? static_cast<long long>(::getpid()) : 0;
  MPI_Bcast(&id, 1, MPI_LONG_LONG, 0, world.get());
  return "/tmp/distmm-device-model-" + std::to_string(id) + ".json";
}

// A device section alone: the engine "blas" (the emulated device's) at f64, at the given
// (side, rate) points; the link and the device memory.
void write_model(const Comm& world, const std::string& path, std::vector<std::pair<index_t, double>> rates,
                 double link, double latency, double memory) {
  if (world.rank() == 0) {
    MachineModel m;
    m.device.measured = true, m.device.device = "hand-made", m.device.ranks = world.size();
    m.device.link_bytes_per_s = link, m.device.link_latency_s = latency, m.device.memory_bytes_per_s = memory;
    for (auto [n, r] : rates) m.device.rates["blas"]["f64"].push_back({n, n, n, r});
    save_machine_model(m, path);
  }
  world.barrier();
}

struct Chosen {
  std::unique_ptr<DistAlgorithm> algo;
  std::string name, why;
};

Chosen choose(const Comm& world, const std::string& path, GemmShape shape, bool strassen_ok = true,
              std::size_t device_limit = std::size_t(1) << 32) {
  static std::unique_ptr<Engine> blas = make_engine("blas", {});
  AlgoOptions o;
  o.device_resident = true, o.inputs_at_home = true;
  o.device_limit = device_limit;
  o.engine = blas.get(), o.dtype = Dtype::f64;
  o.strassen_like_ok = strassen_ok;
  ::setenv("DISTMM_MACHINE_FILE", path.c_str(), 1);
  Chosen c;
  c.algo = make_algorithm(Algorithm::automatic, world, shape, o);
  ::unsetenv("DISTMM_MACHINE_FILE");
  c.name = c.algo->name(), c.why = c.algo->selection();
  return c;
}

bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

}  // namespace

TEST(AutoDevice, SlowMultipliesChooseCapsWithDealtSteps) {
  Comm world = Comm::world();
  if (world.size() < 2) GTEST_SKIP() << "CAPS's dealt steps need 2 ranks or more";
  const std::string path = model_path(world);
  write_model(world, path, {{128, 1e8}, {1024, 1e8}}, 1e13, 1e-9, 1e14);
  const Chosen c = choose(world, path, {1024, 1024, 1024});
  EXPECT_EQ(c.name, "caps") << c.why;
  EXPECT_TRUE(has(c.why, "auto (device model): caps ")) << c.why;
  EXPECT_TRUE(has(c.why, "caps weighed with steps")) << c.why;
  EXPECT_TRUE(has(c.why, "caps XX winograd")) << c.why;  // dealt steps weighed on any P
  EXPECT_TRUE(has(c.why, "(distmm calibrate --device on hand-made")) << c.why;
  EXPECT_TRUE(has(c.why, " s ")) << "each candidate's predicted seconds: " << c.why;
  // The same model without the caller's leave: a classical product, and the row says why.
  const Chosen classical = choose(world, path, {1024, 1024, 1024}, false);
  EXPECT_NE(classical.name, "caps") << classical.why;
  EXPECT_TRUE(has(classical.why, "caps not weighed: a classical product asked for")) << classical.why;
  // Nor where no step sequence fits the device's memory beside the operands (their share of the
  // limit: 1024^2 x 3 x 8 bytes / P, and CAPS holds more than twice that).
  const Chosen tight = choose(world, path, {1024, 1024, 1024}, true, 1);
  EXPECT_NE(tight.name, "caps") << tight.why;
  EXPECT_TRUE(has(tight.why, "caps not weighed: no step sequence fits the device memory (")) << tight.why;
  EXPECT_TRUE(has(tight.why, "X, XX")) << "the dealt steps were tried: " << tight.why;
  if (world.rank() == 0) std::remove(path.c_str());
}

TEST(AutoDevice, TheEnginesRateAtTheLeafSizeDecidesHowDeep) {
  Comm world = Comm::world();
  if (world.size() < 2) GTEST_SKIP() << "CAPS's dealt steps need 2 ranks or more";
  const std::string path = model_path(world);
  // Products of 128^3 and below crawl; from 256^3 on the engine runs at full rate: CAPS still
  // pays (its steps save multiplications), but never down to leaves of 128.
  write_model(world, path, {{128, 1e6}, {256, 1e8}, {1024, 1e8}}, 1e13, 1e-9, 1e14);
  const Chosen c = choose(world, path, {1024, 1024, 1024});
  EXPECT_EQ(c.name, "caps") << c.why;
  EXPECT_TRUE(has(c.why, "XXX")) << "three dealt steps were weighed: " << c.why;
  const GemmShape g = c.algo->largest_product();
  EXPECT_GE(std::min({g.m, g.n, g.k}), 256) << c.algo->layout() << "\n" << c.why;
  // Flat rates: the deepest wins (the fewest multiplications), leaves of 128.
  write_model(world, path, {{128, 1e8}, {1024, 1e8}}, 1e13, 1e-9, 1e14);
  const Chosen flat = choose(world, path, {1024, 1024, 1024});
  EXPECT_EQ(flat.name, "caps") << flat.why;
  EXPECT_LE(flat.algo->largest_product().m, 128) << flat.algo->layout() << "\n" << flat.why;
  if (world.rank() == 0) std::remove(path.c_str());
}

TEST(AutoDevice, ASlowLinkChoosesTheFewestWordsAFastOneTheFewestFlops) {
  Comm world = Comm::world();
  const int P = world.size();
  if (P < 2) GTEST_SKIP() << "one rank moves no word";
  const std::string path = model_path(world);
  // A long k: SUMMA gathers panels of A and B, cuboid splits k and reduces the small C.
  const GemmShape shape{128, 128, 8192};
  write_model(world, path, {{128, 1e13}, {1024, 1e13}}, 1e6, 1e-3, 1e14);
  const Chosen slow = choose(world, path, shape);
  double fewest = std::numeric_limits<double>::max();
  for (const char* a : {"summa", "cuboid"}) {
    AlgoOptions o;
    o.device_resident = true, o.device_limit = std::size_t(1) << 32;
    fewest = std::min(fewest, make_algorithm(*parse_algorithm(a), world, shape, o)->analytic().words_max);
  }
  EXPECT_LE(slow.algo->analytic().words_max, fewest * 1.05) << slow.why;
  EXPECT_EQ(slow.name, "cuboid") << slow.why;
  EXPECT_TRUE(has(slow.why, "link 0.001 GB/s")) << slow.why;
  // A fast link and slow multiplies: the plan that gives the busiest rank the fewest flops
  // (every rank busy), whatever it moves. Classical only (CAPS would save flops too).
  write_model(world, path, {{128, 1e7}, {1024, 1e7}}, 1e14, 1e-9, 1e14);
  const Chosen fast = choose(world, path, {1000, 1000, 1000}, false);
  const double least_flops = std::min(make_algorithm(Algorithm::summa, world, {1000, 1000, 1000}, {})->analytic().flops_max,
                                      make_algorithm(Algorithm::cuboid, world, {1000, 1000, 1000}, {})->analytic().flops_max);
  EXPECT_LE(fast.algo->analytic().flops_max, least_flops * 1.10) << fast.why;
  // At 7 ranks: all 7 busy (1000 x 143 x 1000 each: SUMMA 1 x 7, or cuboid 1 x 7 x 1, which
  // auto takes where the two tie) against cuboid's 2 x 3 x 1 with one rank idle (fewer words,
  // 1/6 of the flops each): the link decides.
  if (P == 7) {
    EXPECT_LE(fast.algo->analytic().flops_max, 2.0 * 1000 * 143 * 1000) << fast.why;
    write_model(world, path, {{128, 1e13}, {1024, 1e13}}, 1e6, 1e-3, 1e14);
    const Chosen slow7 = choose(world, path, {1000, 1000, 1000}, false);
    EXPECT_EQ(slow7.name, "cuboid") << slow7.why;
  }
  if (world.rank() == 0) std::remove(path.c_str());
}

TEST(AutoDevice, NoMeasuredDeviceModelNoCaps) {
  Comm world = Comm::world();
  const std::string path = model_path(world) + ".none";
  const Chosen c = choose(world, path, {512, 512, 512});
  EXPECT_NE(c.name, "caps") << c.why;
  EXPECT_TRUE(has(c.why, "GPU defaults (no machine file at " + path)) << c.why;
  EXPECT_TRUE(has(c.why, "run distmm calibrate --device")) << c.why;
  EXPECT_TRUE(has(c.why, "caps not weighed without a measured device model")) << c.why;
  // A host model alone is no device model either.
  const std::string host = model_path(world) + ".host";
  if (world.rank() == 0) {
    MachineModel m;
    m.measured = true, m.flops_per_s = 1e6;
    save_machine_model(m, host);
  }
  world.barrier();
  const Chosen h = choose(world, host, {512, 512, 512});
  EXPECT_NE(h.name, "caps") << h.why;
  EXPECT_TRUE(has(h.why, "GPU defaults (" + host + " has no device section")) << h.why;
  if (world.rank() == 0) std::remove(host.c_str());
}

// distmm plan and distmm run read the same model and choose alike, CAPS included; the run
// multiplies what was chosen, verified, on the emulated device.
TEST(AutoDevice, PlanIsRunOnTheEmulatedDevice) {
  Comm world = Comm::world();
  const std::string path = model_path(world);
  RunSpec s;
  s.m = s.n = s.k = 256;
  s.mem_limit = std::size_t(1) << 30;
  s.engine = &engine_info("blas");
  s.emulate_device = true;
  s.algo = Algorithm::automatic;
  s.algo_opts.strassen_like_ok = true;
  for (double link : {1e13, 1e6}) {
    write_model(world, path, {{64, 1e8}, {256, 1e8}}, link, link > 1e9 ? 1e-9 : 1e-3, 1e14);
    ::setenv("DISTMM_MACHINE_FILE", path.c_str(), 1);
    const RunReport planned = plan(world, s), ran = run(world, s);
    ::unsetenv("DISTMM_MACHINE_FILE");
    EXPECT_TRUE(ran.passed);
    EXPECT_EQ(planned.residency, ran.residency);
    EXPECT_EQ(planned.algo, ran.algo);
    EXPECT_EQ(planned.layout, ran.layout);
    EXPECT_EQ(planned.selection, ran.selection);
    EXPECT_NE(ran.selection.find("auto (device model)"), std::string::npos) << ran.selection;
    EXPECT_EQ(planned.analytic_words_max, ran.analytic_words_max);
    if (world.size() >= 2) {
      if (link > 1e9) EXPECT_EQ(ran.algo, "caps") << ran.selection;
      else EXPECT_NE(ran.algo, "caps") << ran.selection;
    }
  }
  if (world.rank() == 0) std::remove(path.c_str());
}
