// `distmm calibrate --device`: the device section of the cost model (mpi/algorithms/cost_model.hpp,
// DeviceModel), measured through the same DeviceSpace and engines that device-resident runs use,
// on every rank at once (one rank per GPU, as in a run; or the emulated device over host memory):
//   rates  each engine's rate per dtype on square products of a ladder of sizes (1024 to 16384
//          on GPUs, capped by the device memory; 256 to 1024 on the emulated device; --sizes
//          or --quick), warmed up once, then best of three; the slowest rank's (a static split
//          of the work waits for it);
//   link   ranks paired (0-1, 2-3, ...) exchanging through the space's communicator (NCCL, or MPI
//          through pinned host memory): bandwidth from 64 MiB each way (8 MiB emulated; median
//          over the pairs),
//          latency from one-element exchanges;
//   memory the device memory's streaming rate: a fused 4-in, 1-out pass (DeviceSpace::combine,
//          the shape of CAPS's sums) over 4 x 64 MiB, best of three.
// The host values of an existing machine file are kept (and calibrate keeps this section).
#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <vector>

#include "../../mpi/algorithms/cost_model.hpp"
#include "../../mpi/run/run.hpp"
#include "../../mpi/runtime/comm.hpp"
#include "../../mpi/runtime/device_space.hpp"
#include "../../node/blas.hpp"
#include "../../node/engine.hpp"
#include "../core/files.hpp"
#include "../core/system.hpp"
#include "../core/timer.hpp"
#include "commands.hpp"

namespace distmm {

namespace {

// Seconds of f() on every rank at once: a barrier, f, the space drained; best of `reps` after
// one warm-up. The slowest rank's.
template <class F>
double timed_best(const Comm& world, DeviceSpace& sp, int reps, F&& f) {
  double best = 1e300;
  for (int r = -1; r < reps; ++r) {
    sp.synchronize();
    world.barrier();
    const double t0 = MPI_Wtime();
    f();
    sp.synchronize();
    if (r >= 0) best = std::min(best, MPI_Wtime() - t0);
  }
  return world.allreduce_max_uncounted(best);
}

std::vector<std::string> default_engines(bool emulated) {
  if (emulated) return {"blas"};
  std::vector<std::string> v;
  for (const char* n : {"cublas", "gpu-strassen", "gpu-winograd", "gpu-ozaki", "gpu-winograd-ozaki"})
    for (const EngineInfo& e : engine_registry())
      if (e.name == n && e.memory == Memory::device) v.push_back(n);
  return v;
}

}  // namespace

int calibrate_device_command(const CalibrateOptions& o, std::ostream& os, int rank) {
  Comm world = Comm::world();
  const int P = world.size();
  int threads = 0;
  const std::string path = calibrate_start(o, world, rank, threads);

  // The engines and dtypes, checked before anything is measured.
  const std::vector<std::string> engines = o.engines.empty() ? default_engines(o.emulate_device) : o.engines;
  if (engines.empty())
    throw UsageError("calibrate --device: no GPU engine in this build (built without CUDA?): use --emulate-device "
                     "--engine blas to try the device paths on the host");
  std::vector<const EngineInfo*> infos;
  for (const std::string& name : engines) {
    const EngineInfo& e = engine_info(name);  // a UsageError listing the names when unknown
    if (o.emulate_device && e.memory == Memory::device)
      throw UsageError("calibrate --device --emulate-device measures a host engine (e.g. --engine blas or winograd) "
                       "through the emulated device; not " + name);
    if (!o.emulate_device && e.memory != Memory::device)
      throw UsageError("calibrate --device measures a GPU engine (e.g. --engine cublas); " + name +
                       " is a host engine: add --emulate-device to measure it through the emulated device");
    infos.push_back(&e);
  }
  std::vector<Dtype> dtypes;
  for (const std::string& d : o.dtypes) {
    const auto dt = parse_dtype(d);
    if (!dt) throw UsageError("calibrate --dtype " + d + ": not one of " + dtype_names());
    dtypes.push_back(*dt);
  }
  std::vector<long long> sizes = o.sizes;
  if (sizes.empty()) {
    if (o.emulate_device) sizes = o.quick ? std::vector<long long>{128, 256} : std::vector<long long>{256, 512, 1024};
    else sizes = o.quick ? std::vector<long long>{2048, 8192} : std::vector<long long>{1024, 2048, 4096, 8192, 16384};
  }
  std::sort(sizes.begin(), sizes.end());

  DeviceModel d;
  d.measured = true, d.ranks = P;
  const std::size_t host_budget = available_memory_bytes() / std::max(1, node_local_size());
  std::string transport;
  for (const EngineInfo* info : infos) {
    EngineOptions eo;
    eo.threads = threads;
    eo.device = node_local_rank();
    std::unique_ptr<Engine> engine = info->make(eo);
    const int ranks_per_gpu = o.emulate_device ? 1 : ranks_sharing_gpu(world);
    std::unique_ptr<DeviceSpace> sp = o.emulate_device ? make_emulated_device_space(*engine, host_budget / 2)
                                                       : make_device_space(*engine, world, ranks_per_gpu);
    if (!sp) throw UsageError("calibrate --device: no device space for " + info->name + " on this rank");
    if (d.device.empty())
      d.device = sp->emulated() ? "emulated device (host memory, " + engine->describe() + ")" : engine->describe();
    const double free = -world.allreduce_max_uncounted(-double(sp->free_bytes())) / ranks_per_gpu;
    std::vector<Dtype> these;
    for (Dtype dt : kAllDtypes)
      if (info->dtypes.contains(dt) &&
          (dtypes.empty() ? (dt == Dtype::f64 || dt == Dtype::f32)
                          : std::find(dtypes.begin(), dtypes.end(), dt) != dtypes.end()))
        these.push_back(dt);
    for (Dtype dt : these) {
      for (long long n : sizes) {
        const index_t N = index_t(n);
        const double need = 3.0 * double(N) * double(N) * double(size_of(dt)) + double(sp->engine_workspace(N, N, N, dt));
        if (need > 0.8 * free) break;  // this size and every larger one
        DeviceBlock a = sp->alloc(std::size_t(N * N) * size_of(dt)), b = sp->alloc(std::size_t(N * N) * size_of(dt)),
                    c = sp->alloc(std::size_t(N * N) * size_of(dt));
        sp->fill_random(a.as<void>(), N, N, N, 0, 0, 1, Stream::A, Fill::uniform, dt);
        sp->fill_random(b.as<void>(), N, N, N, 0, 0, 1, Stream::B, Fill::uniform, dt);
        const double one[2] = {1, 0}, zero[2] = {0, 0};
        float onef[2] = {1, 0}, zerof[2] = {0, 0};
        const bool single = dt == Dtype::f32 || dt == Dtype::c32;
        const GemmCall call{dt, Op::N, Op::N, N, N, N, single ? static_cast<const void*>(onef) : one,
                            a.as<void>(), N, b.as<void>(), N, single ? static_cast<const void*>(zerof) : zero,
                            c.as<void>(), N};
        const double s = timed_best(world, *sp, 3, [&] { sp->gemm(call); });
        d.rates[info->name][to_string(dt)].push_back({N, N, N, 2.0 * double(N) * double(N) * double(N) / s});
      }
    }
    if (!transport.empty()) continue;
    // The link and the memory once, in the first engine's space.
    transport = sp->transport();
    d.transport = transport;
    const std::size_t len = o.emulate_device ? std::size_t(1) << 20 : std::size_t(8) << 20;  // doubles
    const bool paired = P > 1 && (rank % 2 == 1 || rank + 1 < P);
    Comm pair = world.split(paired ? rank / 2 : P, rank % 2);
    std::unique_ptr<DeviceComm> link = sp->comm(pair);
    DeviceBlock sb = sp->alloc(len * sizeof(double)), rb = sp->alloc(len * sizeof(double));
    double bw = d.link_bytes_per_s, lat = d.link_latency_s;
    if (paired) {
      const int peer = 1 - pair.rank();
      auto exchange = [&](std::size_t n) {
        link->sendrecv(sb.as<double>(), index_t(n), peer, rb.as<double>(), index_t(n), peer);
      };
      bw = double(len * sizeof(double)) / timed_best(pair, *sp, 3, [&] { exchange(len); });
      lat = timed_best(pair, *sp, 1, [&] {
              for (int r = 0; r < 50; ++r) exchange(1), sp->synchronize();
            }) / 50;
    }
    // Every rank takes part in the gathers (the odd rank out with nothing to add).
    std::vector<double> bws(P), lats(P);
    const double mine[2] = {paired ? bw : -1, paired ? lat : -1};
    std::vector<double> all(2 * std::size_t(P));
    MPI_Allgather(mine, 2, MPI_DOUBLE, all.data(), 2, MPI_DOUBLE, world.get());
    bws.clear(), lats.clear();
    for (int r = 0; r < P; ++r)
      if (all[2 * std::size_t(r)] > 0) bws.push_back(all[2 * std::size_t(r)]), lats.push_back(all[2 * std::size_t(r) + 1]);
    if (!bws.empty()) d.link_bytes_per_s = median(bws), d.link_latency_s = median(lats);
    // The device memory: 4 inputs of len elements into one output.
    {
      DeviceBlock in = sp->alloc(4 * len * sizeof(double)), out = sp->alloc(len * sizeof(double));
      DeviceSpace::Combination k;
      k.n_in = 4, k.n_out = 1, k.out[0] = out.as<void>();
      for (int q = 0; q < 4; ++q) k.in[std::size_t(q)] = in.as<double>() + std::size_t(q) * len, k.coef[0][std::size_t(q)] = q % 2 ? -1 : 1;
      const double s = timed_best(world, *sp, 3, [&] { sp->combine(index_t(len), k, Dtype::f64); });
      d.memory_bytes_per_s = 5.0 * double(len) * sizeof(double) / s;
    }
  }

  calibrate_save(path, world, rank, [&](MachineModel& file) { file.device = d; });  // the host values kept
  if (rank == 0)
    os << "distmm calibrate --device on " << P << " rank" << (P > 1 ? "s" : "") << " (" << d.device << ")\n"
       << "  engine rates (slowest rank, best of 3)  " << describe_rates(d) << "\n"
       << "  link                 " << d.link_bytes_per_s / 1e9 << " GB/s, " << d.link_latency_s * 1e6 << " us ("
       << d.transport
       << (P > 1 ? "; pairs exchanging " + std::to_string((o.emulate_device ? 8 : 64)) + " MiB" : std::string("; one rank: defaults"))
       << ")\n"
       << "  device memory        " << d.memory_bytes_per_s / 1e9 << " GB/s (fused 4-in, 1-out pass)\n"
       << "  saved to             " << path << " (the device section; read by --algo auto and distmm plan on "
       << "device-resident runs)\n";
  return 0;
}

}  // namespace distmm
