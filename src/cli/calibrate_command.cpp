// `distmm calibrate`: measures the three rates of the cost model (mpi/cost_model.hpp) on the
// ranks it runs on, all ranks at once (so shared memory bandwidth and cores count as in a run):
//   F     a rank's GEMM rate (f64, its thread budget, 2048^3, best of three): the median over the
//         ranks, and the slowest rank's (a static split of the work waits for it);
//   beta  point-to-point bandwidth, ranks paired (0-1, 2-3, ...) exchanging 16 MiB (one rank:
//         a memory copy of that size), median over the pairs;
//   alpha half the round trip of an 8-byte message (one rank: 1 us);
//   mu    a rank's streaming rate through memory, every rank at once (a fused 4-in, 7-out pass,
//         the shape of a Strassen step's sums, over 64 MiB of inputs; best of three);
// and saves them where --algo auto reads them (keeping the file's device section: calibrate
// --device, calibrate_device.cpp, measures that).
#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <iostream>
#include <vector>

#include "../../mpi/runtime/comm.hpp"
#include "../../mpi/algorithms/cost_model.hpp"
#include "../../mpi/run/run.hpp"
#include "../../node/blas.hpp"
#include "../../node/fused.hpp"
#include "../core/files.hpp"
#include "../core/matrix.hpp"
#include "../core/timer.hpp"
#include "commands.hpp"

namespace distmm {

std::string calibrate_start(const CalibrateOptions& o, const Comm& world, int rank, int& threads) {
  if (o.threads < 0) throw UsageError("--threads must be 1 or more (0 = automatic)");
  threads = o.threads > 0 ? o.threads : default_threads();
  omp_set_num_threads(threads);
  blas_set_threads(threads);
  std::string path;
  PathProblem where;
  if (rank == 0)
    where = caught([&] {
      path = o.file.empty() ? machine_model_path_for_writing() : o.file;
      if (PathProblem p = output_problem(path, "machine file")) p.raise();
    });
  world.agree(where.message, where.unwritable);
  return path;
}

void calibrate_save(const std::string& path, const Comm& world, int rank, const std::function<void(MachineModel&)>& update) {
  PathProblem saved;
  if (rank == 0)
    saved = caught([&] {
      MachineModel m;
      try {
        if (auto old = read_machine_model(path); old) m = *old;
      } catch (const UsageError&) {  // an unusable file is replaced whole
      }
      update(m);
      save_machine_model(m, path);
    });
  world.agree(saved.message, saved.unwritable);
}

int calibrate_command(const CalibrateOptions& o, std::ostream& os, int rank) {
  if (o.device) return calibrate_device_command(o, os, rank);
  if (o.emulate_device || o.quick || !o.engines.empty() || !o.dtypes.empty() || !o.sizes.empty())
    throw UsageError("calibrate: --emulate-device, --engine, --dtype, --sizes and --quick go with --device");
  Comm world = Comm::world();
  const int P = world.size();
  int threads = 0;
  const std::string path = calibrate_start(o, world, rank, threads);

  // F: every rank multiplies at once.
  const index_t n = 2048;
  Matrix<double> a(n, n), b(n, n), c(n, n);
  a.fill(0.5), b.fill(0.25), c.fill(0);
  double best = 1e30;
  for (int t = 0; t < 3; ++t) {
    world.barrier();
    Stopwatch sw;
    blas_gemm<double>(Op::N, Op::N, n, n, n, 1.0, a.data(), n, b.data(), n, 0.0, c.data(), n);
    best = std::min(best, sw.seconds());
  }
  std::vector<double> rates(P);
  const double mine = 2.0 * n * n * n / best;
  MPI_Allgather(&mine, 1, MPI_DOUBLE, rates.data(), 1, MPI_DOUBLE, world.get());

  // beta and alpha: pairs exchange, all at once.
  const std::size_t bytes = std::size_t(16) << 20;
  std::vector<char> sbuf(bytes, 1), rbuf(bytes, 0);
  double bw = 0, lat = 1e-6;
  const int peer = rank % 2 == 0 ? rank + 1 : rank - 1;
  if (P > 1 && peer < P) {
    auto round_trip = [&](std::size_t len, int reps) {
      world.barrier();
      Stopwatch sw;
      for (int r = 0; r < reps; ++r) {
        if (rank % 2 == 0) {
          MPI_Send(sbuf.data(), int(len), MPI_CHAR, peer, 7, world.get());
          MPI_Recv(rbuf.data(), int(len), MPI_CHAR, peer, 7, world.get(), MPI_STATUS_IGNORE);
        } else {
          MPI_Recv(rbuf.data(), int(len), MPI_CHAR, peer, 7, world.get(), MPI_STATUS_IGNORE);
          MPI_Send(sbuf.data(), int(len), MPI_CHAR, peer, 7, world.get());
        }
      }
      return sw.seconds() / reps / 2;  // one way
    };
    round_trip(bytes, 1);  // warm-up
    bw = double(bytes) / round_trip(bytes, 5);
    lat = round_trip(8, 1000);
  } else {
    if (P > 1) world.barrier(), world.barrier(), world.barrier();  // the odd rank out: round_trip x 3
    Stopwatch sw;
    for (int r = 0; r < 5; ++r) std::memcpy(rbuf.data(), sbuf.data(), bytes);
    bw = 5.0 * double(bytes) / sw.seconds();
  }
  // mu: the memory-bound passes of the Strassen-like algorithms, all ranks at once.
  double mu = 0;
  {
    const index_t len = index_t(2) << 20;  // 4 inputs of 16 MiB, 7 outputs
    std::vector<double> x(4 * len, 1.0), y(7 * len, 0.0);
    std::array<const double*, 4> in;
    std::array<double*, 7> out;
    std::array<std::array<double, 4>, 7> coef{};
    for (int q = 0; q < 4; ++q) in[q] = x.data() + q * len;
    for (int j = 0; j < 7; ++j) out[j] = y.data() + j * len, coef[j][j % 4] = 1, coef[j][(j + 1) % 4] = -1;
    double best_pass = 1e30;
    for (int t = 0; t < 3; ++t) {
      world.barrier();
      Stopwatch sw;
      fused_combine_flat<double, 4, 7>(len, in, out, false, coef);
      best_pass = std::min(best_pass, sw.seconds());
    }
    mu = 11.0 * double(len) * sizeof(double) / best_pass;
  }
  std::vector<double> bws(P), lats(P), mus(P);
  MPI_Allgather(&mu, 1, MPI_DOUBLE, mus.data(), 1, MPI_DOUBLE, world.get());
  MPI_Allgather(&bw, 1, MPI_DOUBLE, bws.data(), 1, MPI_DOUBLE, world.get());
  MPI_Allgather(&lat, 1, MPI_DOUBLE, lats.data(), 1, MPI_DOUBLE, world.get());
  MachineModel m;  // what was measured (the file's device section is kept)
  m.flops_per_s = median(rates);
  m.slowest_flops_per_s = *std::min_element(rates.begin(), rates.end());
  m.bytes_per_s = median(bws);
  m.latency_s = median(lats);
  m.memory_bytes_per_s = median(mus);
  m.measured = true;
  calibrate_save(path, world, rank, [&](MachineModel& file) {
    const DeviceModel device = file.device;
    file = m, file.device = device;
  });
  if (rank == 0)
    os << "distmm calibrate on " << P << " rank" << (P > 1 ? "s" : "") << " x " << threads
       << " threads\n  GEMM rate per rank   " << m.flops_per_s / 1e9 << " GFLOP/s (f64, 2048^3; median, slowest rank "
       << *std::min_element(rates.begin(), rates.end()) / 1e9 << ", fastest "
       << *std::max_element(rates.begin(), rates.end()) / 1e9 << ")\n"
       << "  bandwidth per rank   " << m.bytes_per_s / 1e9 << " GB/s ("
       << (P > 1 ? "16 MiB point-to-point" : "memory copy, one rank") << ")\n"
       << "  latency              " << m.latency_s * 1e6 << " us" << (P > 1 ? "" : " (one rank: assumed)")
       << "\n  memory stream rate   " << m.memory_bytes_per_s / 1e9 << " GB/s per rank (fused 4-in, 7-out pass, all ranks)"
       << "\n  saved to             " << path << " (read by --algo auto and distmm plan)\n";
  return 0;
}

}  // namespace distmm
