// The machine file's device section (cost_model.hpp: DeviceModel): saved and read back, each
// bad value refused with the file, the key and the fix named, and the engine's rate
// interpolated by a product's flops in log space, clamped at the measured ends.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "mpi/algorithms/cost_model.hpp"

using namespace distmm;

namespace {

std::string temp_path(const char* name) {
  return "/tmp/distmm-cost-model-" + std::to_string(::getpid()) + "-" + name + ".json";
}

DeviceModel sample_device() {
  DeviceModel d;
  d.measured = true, d.device = "test GPU", d.transport = "NCCL 2.0", d.ranks = 4;
  d.link_bytes_per_s = 4e10, d.link_latency_s = 3e-5, d.memory_bytes_per_s = 1.5e12;
  d.rates["cublas"]["f64"] = {{1024, 1024, 1024, 2e13}, {4096, 4096, 4096, 5e13}, {16384, 16384, 16384, 6e13}};
  d.rates["gpu-ozaki"]["f32"] = {{2048, 2048, 2048, 8e13}};
  return d;
}

void write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

// The UsageError's message from reading `text` as a machine file ("" where it is read).
std::string refusal(const std::string& text) {
  const std::string path = temp_path("bad");
  write(path, text);
  std::string what;
  try {
    (void)read_machine_model(path);
  } catch (const UsageError& e) {
    what = e.what();
  }
  std::remove(path.c_str());
  return what;
}

const char* kHost = R"("flops_per_s": 2e10, "bytes_per_s": 5e9, "latency_s": 1e-6, "memory_bytes_per_s": 1e10)";
std::string device_json(const std::string& body) { return std::string("{") + kHost + ", \"device\": " + body + "}"; }
const char* kGoodDevice =
    R"({"link_bytes_per_s": 1e11, "link_latency_s": 2e-5, "memory_bytes_per_s": 2e12,
        "rates": {"cublas": {"f64": [{"m": 1024, "n": 1024, "k": 1024, "flops_per_s": 4e13}]}}})";

}  // namespace

TEST(CostModel, DeviceSectionRoundTrip) {
  const std::string path = temp_path("round");
  MachineModel m;
  m.measured = true, m.flops_per_s = 3e10, m.bytes_per_s = 6e9, m.latency_s = 2e-6, m.memory_bytes_per_s = 7e9;
  m.device = sample_device();
  save_machine_model(m, path);
  const auto r = read_machine_model(path);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->measured);
  EXPECT_DOUBLE_EQ(r->flops_per_s, 3e10);
  EXPECT_DOUBLE_EQ(r->memory_bytes_per_s, 7e9);
  ASSERT_TRUE(r->device.measured);
  EXPECT_EQ(r->device.device, "test GPU");
  EXPECT_EQ(r->device.transport, "NCCL 2.0");
  EXPECT_EQ(r->device.ranks, 4);
  EXPECT_DOUBLE_EQ(r->device.link_bytes_per_s, 4e10);
  EXPECT_DOUBLE_EQ(r->device.link_latency_s, 3e-5);
  EXPECT_DOUBLE_EQ(r->device.memory_bytes_per_s, 1.5e12);
  ASSERT_EQ(r->device.rates.at("cublas").at("f64").size(), 3u);
  EXPECT_EQ(r->device.rates.at("cublas").at("f64")[2].m, 16384);
  EXPECT_DOUBLE_EQ(r->device.rates.at("gpu-ozaki").at("f32")[0].flops_per_s, 8e13);

  // A device section alone (calibrate --device before calibrate): the host values stay defaults,
  // unmeasured; a host model alone has no device section.
  MachineModel dev_only;
  dev_only.device = sample_device();
  save_machine_model(dev_only, path);
  const auto r2 = read_machine_model(path);
  ASSERT_TRUE(r2);
  EXPECT_FALSE(r2->measured);
  EXPECT_DOUBLE_EQ(r2->flops_per_s, MachineModel{}.flops_per_s);
  EXPECT_TRUE(r2->device.measured);
  MachineModel host_only;
  host_only.measured = true;
  save_machine_model(host_only, path);
  const auto r3 = read_machine_model(path);
  ASSERT_TRUE(r3);
  EXPECT_TRUE(r3->measured);
  EXPECT_FALSE(r3->device.measured);
  std::remove(path.c_str());
  EXPECT_FALSE(read_machine_model(path));  // no file: none
}

TEST(CostModel, BadDeviceSectionsAreRefusedWithTheFix) {
  EXPECT_EQ(refusal(device_json(kGoodDevice)), "");
  EXPECT_EQ(refusal(std::string("{\"device\": ") + kGoodDevice + "}"), "");  // device alone
  struct Case {
    std::string text, says;
  };
  const Case cases[] = {
      {device_json("[1]"), "device is not a JSON object"},
      {device_json(R"({"link_latency_s": 2e-5, "memory_bytes_per_s": 2e12, "rates": {"x": {"f64": [{"m": 1, "n": 1, "k": 1, "flops_per_s": 1e9}]}}})"),
       "device lacks link_bytes_per_s"},
      {device_json(R"({"link_bytes_per_s": 0, "link_latency_s": 2e-5, "memory_bytes_per_s": 2e12, "rates": {}})"),
       "device.link_bytes_per_s 0 is out of range"},
      {device_json(R"({"link_bytes_per_s": 1e11, "link_latency_s": 2e-5, "memory_bytes_per_s": 2e12, "rates": {}})"),
       "device lacks rates"},
      {device_json(R"({"link_bytes_per_s": 1e11, "link_latency_s": 2e-5, "memory_bytes_per_s": 2e12,
                       "rates": {"cublas": {"f65": [{"m": 1, "n": 1, "k": 1, "flops_per_s": 1e9}]}}})"),
       "f65 is not a dtype"},
      {device_json(R"({"link_bytes_per_s": 1e11, "link_latency_s": 2e-5, "memory_bytes_per_s": 2e12,
                       "rates": {"cublas": {"f64": [{"m": 1, "n": 1, "k": 1, "flops_per_s": -1}]}}})"),
       "device.rates.cublas.f64[0].flops_per_s -1 is out of range"},
      {device_json(R"({"link_bytes_per_s": 1e11, "link_latency_s": 2e-5, "memory_bytes_per_s": 2e12,
                       "rates": {"cublas": {"f64": [{"m": 1, "k": 1, "flops_per_s": 1e9}]}}})"),
       "device.rates.cublas.f64[0] lacks n"},
      {device_json(R"({"link_bytes_per_s": 1e11, "link_latency_s": 2e-5, "memory_bytes_per_s": 2e12,
                       "rates": {"cublas": {"f64": []}}})"),
       "is not a non-empty array"},
      // host values half there beside a device section: still required
      {std::string(R"({"flops_per_s": 2e10, "device": )") + kGoodDevice + "}", "lacks bytes_per_s"},
  };
  for (const Case& c : cases) {
    const std::string what = refusal(c.text);
    EXPECT_NE(what.find(c.says), std::string::npos) << c.text << "\n-> " << what;
    EXPECT_NE(what.find("distmm calibrate"), std::string::npos) << what;  // the fix
    EXPECT_NE(what.find("machine file /tmp/distmm-cost-model-"), std::string::npos) << what;
  }
}

TEST(CostModel, RateIsInterpolatedInLogFlopsAndClamped) {
  const DeviceModel d = sample_device();
  const double f1 = 2.0 * 1024 * 1024 * 1024, f2 = 2.0 * 4096 * 4096 * 4096, f3 = 2.0 * 16384 * 16384 * 16384;
  EXPECT_DOUBLE_EQ(*d.rate("cublas", Dtype::f64, f1), 2e13);
  EXPECT_DOUBLE_EQ(*d.rate("cublas", Dtype::f64, f2), 5e13);
  EXPECT_DOUBLE_EQ(*d.rate("cublas", Dtype::f64, f1 / 100), 2e13);  // below the ladder: its first rate
  EXPECT_DOUBLE_EQ(*d.rate("cublas", Dtype::f64, f3 * 100), 6e13);  // above: its last
  // Halfway in log(flops) between 1024^3 and 4096^3 (2048^3): the geometric mean of the rates.
  EXPECT_NEAR(*d.rate("cublas", Dtype::f64, 2.0 * 2048 * 2048 * 2048), std::sqrt(2e13 * 5e13), 1e13 * 1e-9);
  // A non-square product is priced by its flops: 4096 x 4096 x 1024 = 2048^3 x 2.
  const double r = *d.rate("cublas", Dtype::f64, 2.0 * 4096 * 4096 * 1024);
  EXPECT_GT(r, std::sqrt(2e13 * 5e13));
  EXPECT_LT(r, 5e13);
  EXPECT_FALSE(d.rate("cublas", Dtype::f32, f1));  // not measured
  EXPECT_FALSE(d.rate("blas", Dtype::f64, f1));
  EXPECT_DOUBLE_EQ(*d.rate("gpu-ozaki", Dtype::f32, f3), 8e13);  // one point: flat

  // The prediction: flops at the rate for the largest product's size, words over the link,
  // messages at its latency, streamed elements at the device memory's rate.
  struct E {
    double flops_max, words_max, messages_max, local_words_max;
  } e{f2 * 3, 1e6, 10, 2e6};
  const DevicePrediction p = device_predicted_seconds(d, "cublas", Dtype::f64, e, 4096, 4096, 4096);
  EXPECT_TRUE(p.rate_measured);
  EXPECT_DOUBLE_EQ(p.rate, 5e13);
  EXPECT_NEAR(p.seconds, f2 * 3 / 5e13 + 8e6 / 4e10 + 10 * 3e-5 + 16e6 / 1.5e12, 1e-12);
  const DevicePrediction q = device_predicted_seconds(d, "gpu-winograd", Dtype::f64, e, 4096, 4096, 4096);
  EXPECT_FALSE(q.rate_measured);
  EXPECT_DOUBLE_EQ(q.rate, d.default_flops_per_s);
}
