// Device-resident runs (mpi/device_space.hpp): run() with a GPU engine keeps A, B and C on each
// rank's GPU, exchanges device buffers (NCCL where every rank has its own GPU, else MPI through
// host memory), verifies on the GPU (Freivalds) or gathers C back (full check), and times the
// load and store apart. Integer-valued inputs make the full check exact; odd shapes, every dtype,
// beta != 0 with a random C0, and a plan too large for the GPU (a clear error on every rank).
// Without a GPU the device paths run on an emulated device (host memory and the GPU engines'
// host twins, blas and winograd); what needs a real GPU is skipped, visibly.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <fstream>
#include <vector>

#include "cuda/device_info.hpp"
#include "mpi/run/run.hpp"
#include "mpi/run/stream_plan.hpp"
#include "src/core/npy.hpp"
#include "src/core/random.hpp"
#include "mpi/run/verify.hpp"
#include "node/strassen_formulas.hpp"

using namespace distmm;

namespace {

struct Case {
  index_t m, n, k;
};
const Case kCases[] = {{1, 1, 1}, {7, 11, 13}, {97, 5, 31}, {5, 3, 101}, {130, 67, 259}};

int world_size() {
  int P;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  return P;
}

// Without a GPU the device paths run on an emulated device (host memory, every lane in turn)
// with the GPU engine's host twin: the same algorithms' device code, checked in CI.
bool emulated() { return gpu_count() == 0; }
void on_device(RunSpec& s, const std::string& gpu_engine) {
  s.engine = &engine_info(!emulated() ? gpu_engine : gpu_engine == "cublas" ? "blas" : "winograd");
  if (emulated()) s.emulate_device = true, s.mem_limit = std::size_t(1) << 30;
}

RunReport run_case(const std::string& algo, const std::string& engine, Dtype dt, Case c, Verify v,
                   std::complex<double> beta = 0.0, bool host_staged = false, AlgoOptions ao = {}) {
  RunSpec s;
  s.algo_opts = ao;
  s.m = c.m, s.n = c.n, s.k = c.k;
  s.dtype = dt;
  s.algo = *parse_algorithm(algo);
  on_device(s, engine);
  s.fill = Fill::integer;
  s.verify = v;
  s.alpha = is_complex(dt) ? std::complex<double>(2, -1) : 2.0;
  s.beta = beta;
  s.repeat = 2;
  s.threads = 1;
  s.host_staged = host_staged;
  s.engine_opts.levels = 1;  // the Strassen-like engines recurse once where sizes allow
  s.engine_opts.tau1 = s.engine_opts.tau2 = 16;
  return run(Comm::world(), s);
}

// An f64 N^3 SUMMA run on `rows` grid rows with integer inputs, for the memory-plan tests
// (Freivalds: the full check's gathered copies need memory these tests leave out).
RunSpec summa_memory_case(index_t N, int rows, const std::string& engine) {
  RunSpec s;
  s.m = s.n = s.k = N;
  s.dtype = Dtype::f64;
  s.algo = Algorithm::summa;
  s.algo_opts.grid_rows = rows;
  on_device(s, engine);
  s.fill = Fill::integer;
  s.verify = Verify::freivalds;
  s.threads = 1;
  return s;
}

}  // namespace

TEST(DeviceRun, ExactOnEveryShapeDtypeAndEngine) {
  const int P = world_size();
  std::vector<std::string> algos{"summa", "cuboid", "auto"};
  for (int q = 1; q * q <= P; ++q)
    if (q * q == P) algos.push_back("cannon");
  for (int q = 1; q * q * q <= P; ++q)
    if (q * q * q == P) algos.push_back("dns");
  for (const std::string& algo : algos)
    for (const char* engine : {"cublas", "gpu-winograd"})
      for (Dtype dt : {Dtype::f64, Dtype::f32, Dtype::c64})
        for (const Case& c : kCases) {
          const std::string what = algo + "/" + engine + " " + to_string(dt) + " " + std::to_string(c.m) + "x" +
                                   std::to_string(c.n) + "x" + std::to_string(c.k) + " P=" + std::to_string(P);
          RunReport r = run_case(algo, engine, dt, c, Verify::full, is_complex(dt) ? std::complex<double>(1, 1) : 3.0);
          EXPECT_TRUE(r.passed) << what;
          EXPECT_EQ(r.max_abs, 0.0) << what;
          EXPECT_EQ(r.residency.rfind(emulated() ? "emulated device" : "device", 0), 0u) << what << ": " << r.residency;
          EXPECT_EQ(r.words_max, r.analytic_words_max) << what << ": words counted as the layout's";
          RunReport f = run_case(algo, engine, dt, c, Verify::freivalds);
          EXPECT_TRUE(f.passed) << what << " (Freivalds on the GPU)";
          EXPECT_EQ(f.verify, emulated() ? "freivalds (on the emulated device)" : "freivalds (on the GPU)") << what;
        }
}

// SUMMA on a 1 x P grid gathers A alone and hands the engine its own columns first
// (gemm_pending_a): on two GPUs each rank owns one k-half of an even k (rank 0 more than a half
// of an odd k), where gpu-winograd begins with the products of that half and waits for the
// gather only then (the schedule itself is tested in tests/node). On the emulated device the
// space waits first; the SUMMA path around it is the same. Odd m and n (peeled), beta != 0;
// exact on integer inputs.
TEST(DeviceRun, SummaStartsOnItsOwnHalfOfA) {
  const int P = world_size();
  for (Dtype dt : {Dtype::f64, Dtype::f32, Dtype::c64})
    for (const Case& c : {Case{40, 34 * P, 64}, Case{41, 33 * P, 64}, Case{64, 64, 130}, Case{37, 35 * P, 65}}) {
      const std::string what = std::string(to_string(dt)) + " " + std::to_string(c.m) + "x" + std::to_string(c.n) + "x" +
                               std::to_string(c.k) + " P=" + std::to_string(P);
      RunReport r = run_case("summa", "gpu-winograd", dt, c, Verify::full, 3.0);
      EXPECT_TRUE(r.passed) << what;
      EXPECT_EQ(r.max_abs, 0.0) << what;
      if (P == 2) EXPECT_EQ(r.layout, "1x2 grid, 2 panels of <= " + std::to_string(c.k) + ", gathered into one whole-k product") << what;
    }
}

// SUMMA's whole-k gathers land every owner's columns of A (rows of B) in one buffer, and a
// rank's own block lives there (device_home): not copied in, not held twice, and never written.
// Three multiplies on the blocks at home give the exact product (integer inputs, against a
// reference from the generator, not from device memory) and leave the blocks as generated;
// blocks passed from elsewhere give the same product. Every grid of P ranks: 1 x P (A gathered
// alone), P x 1 (B alone) and the 2-D ones between (both).
template <class T>
void summa_home_case(index_t m, index_t n, index_t k, int grid_rows) {
  using In = DistAlgorithm::Input;
  const Comm world = Comm::world();
  const int P = world.size();
  EngineOptions eo;
  eo.device = node_local_rank();
  eo.levels = 1;
  eo.tau1 = eo.tau2 = 16;
  auto engine = make_engine(emulated() ? "winograd" : "gpu-winograd", eo);
  auto space = emulated() ? make_emulated_device_space(*engine, std::size_t(1) << 30)
                          : make_device_space(*engine, world, ranks_sharing_gpu(world));
  ASSERT_TRUE(space);
  AlgoOptions ao;
  ao.device_resident = true;
  ao.engine = engine.get();
  ao.dtype = dtype_of<T>();
  ao.grid_rows = grid_rows;
  // Homes only where the caller says it places the inputs there (not a streamed run's stages).
  ASSERT_FALSE(make_algorithm(Algorithm::summa, world, {m, n, k}, ao)->device_home(In::a).has_value());
  ao.inputs_at_home = true;
  auto algo = make_algorithm(Algorithm::summa, world, {m, n, k}, ao);
  const std::string what = std::string(to_string(dtype_of<T>())) + " " + std::to_string(m) + "x" + std::to_string(n) +
                           "x" + std::to_string(k) + " P=" + std::to_string(P) + " " + algo->layout();
  ASSERT_EQ(algo->device_home(In::a).has_value(), grid_rows < P) << what;  // more than one grid column
  ASSERT_EQ(algo->device_home(In::b).has_value(), grid_rows > 1) << what;  // more than one grid row
  algo->prepare_device(*space);
  algo->reserve_device(*space, dtype_of<T>());
  const Piece &pa = algo->piece_a(), &pb = algo->piece_b(), &pc = algo->piece_c();
  const std::uint64_t seed = 5;
  auto generate = [&](const DeviceDistMatrix& d, Stream st) {
    for_each_run_block(d.piece, [&](index_t lr, index_t lc, index_t gr, index_t gc, index_t nr, index_t nc) {
      space->fill_random(d.data<T>() + lr + lc * d.ld, d.ld, nr, nc, gr, gc, seed, st, Fill::integer, dtype_of<T>());
    });
  };
  // Each input apart, and at home where the algorithm has one.
  DeviceDistMatrix apart[2] = {DeviceDistMatrix(*space, m, k, pa, sizeof(T)), DeviceDistMatrix(*space, k, n, pb, sizeof(T))};
  DeviceDistMatrix at_home[2];
  const In inputs[2] = {In::a, In::b};
  const Stream streams[2] = {Stream::A, Stream::B};
  for (int x = 0; x < 2; ++x) {
    const Piece& p = x == 0 ? pa : pb;
    void* home = algo->device_home_address(inputs[x], dtype_of<T>());
    // An address only with a home, and always where the rank's block is not empty (an empty
    // one may have an address, where the gather buffer holds the other ranks' parts, k < P).
    if (home) EXPECT_TRUE(algo->device_home(inputs[x]).has_value()) << what;
    if (algo->device_home(inputs[x]) && p.rows() * p.cols() > 0) EXPECT_NE(home, nullptr) << what;
    generate(apart[x], streams[x]);
    if (home) {
      at_home[x] = DeviceDistMatrix(x == 0 ? m : k, x == 0 ? k : n, p, home, algo->device_home(inputs[x])->ld);
      generate(at_home[x], streams[x]);
    }
  }
  DeviceDistMatrix C(*space, m, n, pc, sizeof(T));
  auto download = [&](const DeviceDistMatrix& d) {
    Matrix<T> h(d.piece.rows(), d.piece.cols());
    space->download(h.data(), std::max<index_t>(h.rows(), 1), d.data<T>(), d.ld, h.rows(), h.cols(), sizeof(T));
    return h;
  };
  // The local block of C from the generator, in wide arithmetic (exact on integer inputs).
  const auto rows = Piece::globals(pc.row_runs), cols = Piece::globals(pc.col_runs);
  auto check = [&](const char* how) {
    const Matrix<T> c = download(C);
    index_t wrong = 0;
    for (std::size_t j = 0; j < cols.size(); ++j)
      for (std::size_t i = 0; i < rows.size(); ++i) {
        Wide<T> ref = 0;
        for (index_t l = 0; l < k; ++l)
          ref += Wide<T>(random_element<T>(seed, Stream::A, rows[i], l, Fill::integer)) *
                 Wide<T>(random_element<T>(seed, Stream::B, l, cols[j], Fill::integer));
        wrong += Wide<T>(c(index_t(i), index_t(j))) != ref;
      }
    EXPECT_EQ(wrong, 0) << what << " (" << how << ")";
  };
  const T one(1), zero(0);
  auto multiply = [&](const DeviceDistMatrix& a, const DeviceDistMatrix& b) {
    algo->multiply_device(*space, {dtype_of<T>(), &one, {a.data<T>(), pa.rows(), pa.cols(), a.ld},
                                   {b.data<T>(), pb.rows(), pb.cols(), b.ld}, &zero, C.data<T>(), pc.rows(),
                                   pc.cols(), C.ld});
    space->synchronize();
  };
  const DeviceDistMatrix& a = at_home[0].data<T>() ? at_home[0] : apart[0];
  const DeviceDistMatrix& b = at_home[1].data<T>() ? at_home[1] : apart[1];
  for (int rep = 0; rep < 3; ++rep) multiply(a, b);
  check("inputs at home where they have one");
  for (int x = 0; x < 2; ++x)
    if (at_home[x].data<T>()) {
      const Matrix<T> after = download(at_home[x]), generated = download(apart[x]);
      index_t changed = 0;
      for (index_t t = 0; t < after.size(); ++t) changed += after.data()[t] != generated.data()[t];
      EXPECT_EQ(changed, 0) << what << ": the multiply wrote into the rank's block of " << (x == 0 ? "A" : "B");
    }
  // Blocks passed from elsewhere are copied in: the homes hold something else first.
  for (int x = 0; x < 2; ++x)
    if (at_home[x].data<T>())
      for_each_run_block(at_home[x].piece, [&](index_t lr, index_t lc, index_t gr, index_t gc, index_t nr, index_t nc) {
        space->fill_random(at_home[x].data<T>() + lr + lc * at_home[x].ld, at_home[x].ld, nr, nc, gr, gc, seed + 1,
                           streams[x], Fill::integer, dtype_of<T>());
      });
  multiply(apart[0], apart[1]);
  check("inputs apart");
}

TEST(DeviceRun, SummaKeepsTheRanksBlocksWhereItGathersThem) {
  const int P = Comm::world().size();
  for (const Case& c : {Case{37, 13 * P, 41}, Case{64, 32 * P, 64}, Case{5, P, 3 * P + 1}, Case{11 * P, 7, 29},
                        Case{1, 1, 1}, Case{7, 9, 1}, Case{3, 3, 2}, Case{2, 7, 3}})
    for (int rows = 1; rows <= P; ++rows) {
      if (P % rows) continue;
      summa_home_case<double>(c.m, c.n, c.k, rows);
      summa_home_case<std::complex<float>>(c.m, c.n, c.k, rows);
    }
}

// The GPU plan counts an input at home once: on the emulated device, with room for SUMMA's
// whole-k gather buffer, B, C and the engine's workspace, but not for a separate block of the
// gathered input too, the run gathers whole k (the algorithm's own memory test discounts the
// block it will hold) and passes, and its planned bytes per rank are exactly those. A 1 x P grid
// (A gathered) and a P x 1 one (B gathered, plus one panel of B to receive into).
TEST(DeviceRun, PlanHoldsTheGatheredInputOnce) {
  if (!emulated()) GTEST_SKIP() << "a GPU's own free memory sets its limit: planned on the emulated device only";
  const int P = world_size();
  if (P == 1) GTEST_SKIP() << "one rank gathers nothing";
  const index_t N = 24 * P;
  const double e = 8, blk = double(N) * N / P;  // f64; an operand's block per rank
  for (int rows : {1, P}) {
    RunSpec s = summa_memory_case(N, rows, "gpu-winograd");
    s.engine_opts.levels = 1;
    s.engine_opts.tau1 = s.engine_opts.tau2 = 16;
    s.repeat = 2;
    EngineOptions eo = s.engine_opts;
    const double work = double(engine_info("winograd").make(eo)->workspace_bytes(rows == 1 ? N : N / P,
                                                                                 rows == 1 ? N / P : N, N, Dtype::f64));
    // Gathered buffers: A's N x N (1 x P), or B's N x N and a panel of N / P rows (P x 1).
    const double buffers = (double(N) * N + (rows == 1 ? 0.0 : blk)) * e;
    const double need = 2 * blk * e + buffers + work;  // the other input's block and C's
    // The emulated device holds the budget less the host's copies (3 blocks); it gets room for
    // `need` and half a block more, short of a separate block of the gathered input.
    s.mem_limit = static_cast<std::size_t>(3 * blk * e + need + 0.5 * blk * e);
    RunReport r = run(Comm::world(), s);
    const std::string what = "grid rows " + std::to_string(rows) + ", P=" + std::to_string(P) + ": " + r.layout;
    EXPECT_TRUE(r.passed) << what;
    EXPECT_NE(r.layout.find("gathered into one whole-k product"), std::string::npos) << what;
    EXPECT_EQ(r.peak_bytes, need) << what;
  }
}

// run() takes the check's view of the inputs before the first multiply: a multiply that doubles
// its A first and multiplies on consistently (C = 2 A B) fails Freivalds' check and the full
// one, on SUMMA (A at home on a 1 x P grid) and cuboid. Taken after the loop, both would pass.
TEST(DeviceRun, InputsChangedByTheMultiplyFailTheCheck) {
  for (const char* algo : {"summa", "cuboid"})
    for (Verify v : {Verify::freivalds, Verify::full}) {
      RunSpec s;
      s.m = 37, s.n = 29 * world_size(), s.k = 41;
      s.dtype = Dtype::f64;
      s.algo = *parse_algorithm(algo);
      on_device(s, "gpu-winograd");
      s.fill = Fill::integer;
      s.verify = v;
      s.repeat = 2;
      s.threads = 1;
      s.engine_opts.levels = 1;
      s.engine_opts.tau1 = s.engine_opts.tau2 = 16;
      bool changed = false;
      s.device_repetition_started = [&](DeviceSpace& sp, const MultiplyCall& c) {
        if (changed) return;
        changed = true;
        double* a = const_cast<double*>(static_cast<const double*>(c.A.data));
        if (c.A.rows * c.A.cols > 0) sp.scale_add<double>(a, c.A.ld, a, c.A.ld, c.A.rows, c.A.cols, 2.0, 0.0);
      };
      const RunReport r = run(Comm::world(), s);
      EXPECT_TRUE(changed) << algo;
      EXPECT_FALSE(r.passed) << algo << " " << r.verify << ": residual " << r.residual;
    }
}

// Every cuboid grid of P ranks (uneven parts travel padded through NCCL's equal-part
// collectives), with one and with three sequential k-steps.
TEST(DeviceRun, CuboidOnEveryGridAndWithKSteps) {
  const int P = world_size();
  for (int pm = 1; pm <= P; ++pm)
    for (int pn = 1; pm * pn <= P; ++pn) {
      if (P % (pm * pn)) continue;
      const int pk = P / (pm * pn);
      for (int steps : {1, 3}) {
        AlgoOptions ao;
        ao.cuboid_grid = {pm, pn, pk};
        ao.cuboid_steps = steps;
        for (const Case& c : {Case{23, 17, 29}, Case{5, 3, 101}, Case{64, 7, 9}}) {
          for (Dtype dt : {Dtype::f64, Dtype::c32}) {
            RunReport r = run_case("cuboid", "cublas", dt, c, Verify::full, 2.0, false, ao);
            const std::string what = std::to_string(pm) + "x" + std::to_string(pn) + "x" + std::to_string(pk) +
                                     " steps " + std::to_string(steps) + " " + to_string(dt) + " " +
                                     std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k);
            EXPECT_TRUE(r.passed) << what;
            EXPECT_EQ(r.max_abs, 0.0) << what;
            EXPECT_EQ(r.words_max, r.analytic_words_max) << what;
          }
        }
      }
    }
}

// Cuboid's first step in parts of B's columns with the emulation on GPUs: each part after the
// first takes op(A)'s slices from the part before (ReuseOfA), with a verified result.
TEST(DeviceRun, CuboidPartsReuseTheEmulationsSlicesOfA) {
  if (emulated()) GTEST_SKIP() << "the INT8 emulation runs on GPUs only";
  const int P = world_size();
  if (P < 2) GTEST_SKIP() << "one rank: no parts";
  for (int pm = 2; pm <= P; ++pm) {
    if (P % pm) continue;
    AlgoOptions ao;
    ao.cuboid_grid = {pm, 1, P / pm};
    ao.cuboid_steps = 1;
    for (Dtype dt : {Dtype::f32, Dtype::f64, Dtype::c64})
      for (const Case& c : {Case{67, 45, 300}, Case{9, 130, 17}}) {
        const RunReport r = run_case("cuboid", "gpu-ozaki", dt, c, Verify::full, 2.0, false, ao);
        const std::string what = std::to_string(pm) + "x1x" + std::to_string(P / pm) + " " + to_string(dt) + " " +
                                 std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k);
        EXPECT_TRUE(r.passed) << what << ": " << r.verify;
        // rank 0's parts: its own columns of B, then the rest
        EXPECT_NE(r.engine_detail.find("on op(A)'s slices of the product before"), std::string::npos)
            << what << ": " << r.engine_detail;
      }
  }
}

// SUMMA on a device reads a panel that is not broadcast (A's on one grid column, B's on one grid
// row, both on one rank) in place, so its plan counts no buffer for it: with device memory for the
// broadcast panels' two buffers of width k but not for the other operand's too, the panels stay
// whole owner blocks (before, they were halved). On the emulated device, where the memory is set.
TEST(DeviceRun, SummaPanelsReadInPlaceNeedNoBuffers) {
  if (!emulated()) GTEST_SKIP() << "a GPU's own free memory sets its limit: planned on the emulated device only";
  const int P = world_size();
  const index_t N = 1024;
  for (int rows : {1, P}) {
    RunSpec s = summa_memory_case(N, rows, "cublas");
    s.repeat = 1;
    // The emulated device holds the rank's budget less the host's copies and the device's blocks
    // of A, B, C (3 N^2 / P words together); left: 2 N^2 + N^2 / P words, room for the broadcast
    // operand's two panels of width k (2 N^2 words; none on one rank), not for both operands'.
    const double words = 2.0 * (3.0 * N * N / P) + 2.0 * N * N + double(N) * N / P;
    s.mem_limit = static_cast<std::size_t>(words * 8);
    RunReport r = run(Comm::world(), s);
    const std::string what = "grid rows " + std::to_string(rows) + ", P=" + std::to_string(P) + ": " + r.layout;
    EXPECT_TRUE(r.passed) << what;
    EXPECT_NE(r.layout.find("panels of <= " + std::to_string(N)), std::string::npos) << what;
  }
}

TEST(DeviceRun, DeviceAndHostStagedRunsBothVerifyAndReportTheirTransfers) {
  if (gpu_count() == 0) GTEST_SKIP() << "no GPU visible: device-resident runs not run";
  const Case c{61, 59, 67};
  RunReport dev = run_case("summa", "cublas", Dtype::f64, c, Verify::full);
  RunReport host = run_case("summa", "cublas", Dtype::f64, c, Verify::full, 0.0, true);
  EXPECT_TRUE(dev.passed);
  EXPECT_TRUE(host.passed);
  EXPECT_EQ(host.residency, "host-staged (--host-staged)");
  EXPECT_GT(dev.load_seconds, 0.0);
  EXPECT_GT(dev.store_seconds, 0.0);  // C came back for the full check
}

// Freivalds' check on device blocks fails on a C with one wrong entry, on whichever rank holds
// it, and passes on the right one.
TEST(DeviceRun, FreivaldsOnTheGpuCatchesOneWrongEntry) {
  const Comm world = Comm::world();
  EngineOptions eo;
  eo.device = node_local_rank();
  auto engine = make_engine(emulated() ? "blas" : "cublas", eo);
  auto space = emulated() ? make_emulated_device_space(*engine, std::size_t(1) << 30)
                          : make_device_space(*engine, world, ranks_sharing_gpu(world));
  ASSERT_TRUE(space);
  const index_t m = 37, n = 41, k = 29;
  const int P = world.size(), r = world.rank();
  Partition1D rows{m, P};
  // A and C split by rows, B whole on every rank: C_r = A_r B.
  Piece pa = Piece::block(rows.start(r), rows.size(r), 0, k), pb = Piece::block(0, k, 0, n),
        pc = Piece::block(rows.start(r), rows.size(r), 0, n);
  DeviceDistMatrix A(*space, m, k, pa, sizeof(double)), B(*space, k, n, pb, sizeof(double)),
      C(*space, m, n, pc, sizeof(double));
  space->fill_random(A.data<double>(), A.ld, rows.size(r), k, rows.start(r), 0, 7, Stream::A, Fill::uniform, Dtype::f64);
  space->fill_random(B.data<double>(), B.ld, k, n, 0, 0, 7, Stream::B, Fill::uniform, Dtype::f64);
  space->gemm<double>(Op::N, Op::N, rows.size(r), n, k, 1.0, A.data<double>(), A.ld, B.data<double>(), B.ld, 0.0,
                      C.data<double>(), C.ld);
  // Every rank multiplied by the whole of B, but the check sums the pieces over ranks: B counts
  // as rank 0's piece alone.
  DeviceDistMatrix none(*space, k, n, Piece{}, sizeof(double));
  const DeviceDistMatrix& Bv = r == 0 ? B : none;
  const double tol = verify_tolerance(Dtype::f64, k, 1.0);
  const VerifyResult good = verify_freivalds_device<double>(*space, A, Bv, C, 1.0, 0.0, nullptr, 2, 99, tol, world);
  EXPECT_TRUE(good.passed) << "residual " << good.residual;
  if (r == P - 1 && rows.size(r) > 0) {  // one entry off by 1e-9 of its size
    double v;
    space->download(&v, 1, C.data<double>(), C.ld, 1, 1, sizeof(double));
    v += 1e-9 * std::max(std::abs(v), 1.0);
    space->upload(C.data<double>(), C.ld, &v, 1, 1, 1, sizeof(double));
  }
  const VerifyResult bad = verify_freivalds_device<double>(*space, A, Bv, C, 1.0, 0.0, nullptr, 2, 99, tol, world);
  EXPECT_FALSE(bad.passed) << "residual " << bad.residual;
  // The reference, taken before a multiply, holds the inputs as they were: a multiply that
  // doubled A and multiplied on consistently fails against it (run() takes it so), where a
  // check taken wholly afterwards would pass.
  const auto before = freivalds_reference_device<double>(*space, A, Bv, 1.0, 0.0, nullptr, 2, 99, n, world);
  space->scale_add<double>(A.data<double>(), A.ld, A.data<double>(), A.ld, rows.size(r), k, 2.0, 0.0);
  space->gemm<double>(Op::N, Op::N, rows.size(r), n, k, 1.0, A.data<double>(), A.ld, B.data<double>(), B.ld, 0.0,
                      C.data<double>(), C.ld);
  EXPECT_FALSE(verify_freivalds_device<double>(*space, before, C, tol, world).passed);
  EXPECT_TRUE(verify_freivalds_device<double>(*space, A, Bv, C, 1.0, 0.0, nullptr, 2, 99, tol, world).passed);
}

// CAPS on device buffers: BFS steps (grouped exchanges among 7 peers), DFS steps, the leaf
// SUMMA of m > 1 ranks, dealt steps (whole subproblems dealt over any rank count, the sums and
// products through the fused device combinations), both formulas; every step sequence this
// rank count allows, exact on integer inputs (real and complex), and the same words as the
// layout's count.
TEST(DeviceRun, CapsOnEveryStepSequenceAndFormula) {
  int ran = 0;
  for (const char* steps : {"D", "DD", "B", "BD", "DB", "X", "XX", "XXX", "DX", "BX", "BXX"})
    for (const BilinearFormula* f : {&kStrassenFormula, &kWinogradFormula})
      for (const Case& c : {Case{37, 29, 41}, Case{64, 64, 64}, Case{5, 3, 101}})
        for (Dtype dt : {Dtype::f64, Dtype::c32}) {
        if (dt == Dtype::c32 && std::string(steps).find('X') == std::string::npos) continue;
        AlgoOptions ao;
        ao.caps_steps = parse_caps_steps(steps);
        ao.formula = f;
        RunReport r;
        try {
          r = run_case("caps", "cublas", dt, c, Verify::full, 2.0, false, ao);
        } catch (const UsageError&) {
          continue;  // a sequence this rank count does not allow
        }
        ++ran;
        const std::string what = std::string(steps) + " " + f->name + " " + std::string(to_string(dt)) + " " +
                                 std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) +
                                 " P=" + std::to_string(world_size());
        EXPECT_TRUE(r.passed) << what;
        EXPECT_EQ(r.max_abs, 0.0) << what;
        EXPECT_EQ(r.residency.rfind(emulated() ? "emulated device" : "device", 0), 0u) << what << ": " << r.residency;
        EXPECT_EQ(r.words_max, r.analytic_words_max) << what;
      }
  if (ran == 0) GTEST_SKIP() << "caps does not run on " << world_size() << " ranks";
}

TEST(DeviceRun, TooLargeForTheGpuIsAClearErrorOnEveryRank) {
  if (gpu_count() == 0) GTEST_SKIP() << "no GPU visible: device-resident runs not run";
  RunSpec s;
  s.m = s.n = s.k = 400000;  // 3.8 TB of f64 operands
  s.algo = Algorithm::summa;
  s.engine = &engine_info("cublas");
  s.mem_limit = std::size_t(1) << 50;
  try {
    run(Comm::world(), s);
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("GPU memory"), std::string::npos) << msg;
    EXPECT_NE(msg.find("more GPUs"), std::string::npos) << msg;
  }
}

// Host inputs streamed through the GPUs in panels (--from-host --stages RxC): every algorithm
// with a device path, panels of m, of n and of both (odd sizes), beta != 0 (C0 comes in with each
// stage), exact on integer inputs, the words the stages' layouts count, and from .npy files the
// product written to --out equal to the unstreamed run's, byte for byte.
// The first stage's product begun on the first k-part of its operands while the rest comes in
// (RunSpec::split_first_stage, k_prefix): SUMMA's whole-k product and its panel loop, cuboid
// with one k-step (cut in two products) and with several (gathers between them), on odd k
// (1 included: an empty first part), beta != 0 (C0 with the first part); exact, and the same
// words as loading the stage whole.
TEST(DeviceRun, StreamedFirstStageInKParts) {
  const int P = world_size();
  struct Config {
    std::string name, algo, engine;
    AlgoOptions opts;
  };
  std::vector<Config> configs;
  AlgoOptions narrow;
  narrow.panel = 7;  // the panel loop, several panels on every grid
  configs.push_back({"summa (whole k)", "summa", "gpu-winograd", {}});
  configs.push_back({"summa (panels)", "summa", "cublas", narrow});
  AlgoOptions k_only, k_steps, m_steps, n_steps;
  k_only.cuboid_grid = {1, 1, P};  // one k-step, nothing gathered: cut in two products
  k_steps.cuboid_grid = {1, 1, P}, k_steps.cuboid_steps = 3;
  m_steps.cuboid_grid = {1, P, 1}, m_steps.cuboid_steps = 2;  // A gathered per k-step
  n_steps.cuboid_grid = {P, 1, 1}, n_steps.cuboid_steps = 2;  // B gathered: step 0 begun on B's own columns
  configs.push_back({"cuboid 1x1xP", "cuboid", "gpu-winograd", k_only});
  configs.push_back({"cuboid 1x1xP, 3 k-steps", "cuboid", "cublas", k_steps});
  configs.push_back({"cuboid 1xPx1, 2 k-steps", "cuboid", "cublas", m_steps});
  configs.push_back({"cuboid Px1x1, 2 k-steps", "cuboid", "cublas", n_steps});
  for (const Config& cf : configs)
    for (const Case& c : {Case{37, 29, 41}, Case{6, 9, 1}, Case{13, 8, 2}, Case{64, 1, 97}})
      for (bool split : {true, false}) {
        if (!split && c.m != 37) continue;  // loaded whole: one shape (each run makes its NCCL communicators)
        RunSpec s;
        s.algo_opts = cf.opts;
        s.m = c.m, s.n = c.n, s.k = c.k;
        s.dtype = Dtype::f64;
        s.algo = *parse_algorithm(cf.algo);
        on_device(s, cf.engine);
        s.fill = Fill::integer;
        s.verify = Verify::full;
        s.alpha = 2.0, s.beta = -3.0;
        s.repeat = 2;
        s.threads = 1;
        s.inputs_from_host = true;
        s.stage_rows = 2, s.stage_cols = 1;
        s.split_first_stage = split;
        s.engine_opts.levels = 1;
        s.engine_opts.tau1 = s.engine_opts.tau2 = 16;
        const std::string what = cf.name + (split ? " split " : " whole ") + std::to_string(c.m) + "x" +
                                 std::to_string(c.n) + "x" + std::to_string(c.k) + " P=" + std::to_string(P);
        if (std::getenv("DISTMM_TEST_PROGRESS")) std::fprintf(stderr, "[%d] %s\n", Comm::world().rank(), what.c_str());
        RunReport r;
        try {
          r = run(Comm::world(), s);
        } catch (const UsageError& e) {
          ADD_FAILURE() << what << ": " << e.what();
          continue;
        }
        EXPECT_TRUE(r.passed) << what;
        EXPECT_EQ(r.max_abs, 0.0) << what;
        EXPECT_DOUBLE_EQ(r.words_mean, r.analytic_words_mean) << what;
        EXPECT_EQ(r.stages, 2) << what << ": " << r.layout;
        // split wherever a first k-part is non-empty somewhere: cuboid with k-steps, or with one
        // where a layer holds 2 or more of k; SUMMA where k has two panels or more (owner blocks
        // on more than one rank, or 7 wide)
        const bool parts = cf.algo == "cuboid" ? cf.opts.cuboid_steps > 1 || (c.k + P - 1) / P >= 2
                                               : P > 1 ? c.k > 1 : cf.opts.panel > 0 && c.k > 7;
        EXPECT_EQ(r.first_stage_split, split && parts) << what << ": " << r.layout;
        EXPECT_GE(r.exposed_load_seconds, 0.0) << what;
      }
}

TEST(DeviceRun, StreamedHostInputsInRowPanels) {
  const int P = world_size();
  std::vector<std::string> algos{"summa", "cuboid"};
  for (int q = 1; q * q <= P; ++q)
    if (q * q == P) algos.push_back("cannon");
  for (int q = 1; q * q * q <= P; ++q)
    if (q * q * q == P) algos.push_back("dns");
  if (P >= 2) algos.push_back("caps");  // dealt steps
  algos.push_back("auto");              // chosen for the stages' products
  int streamed = 0;
  for (const std::string& algo : algos)
    for (StageGrid g : {StageGrid{2, 1}, {1, 3}, {3, 2}})
      for (const Case& c : {Case{37, 29, 41}, Case{130, 67, 259}, Case{5, 3, 101}})
        for (Dtype dt : {Dtype::f64, Dtype::c32}) {
          // every grid and shape with SUMMA; a sample with the others (each run makes its own
          // NCCL communicators, which takes a while)
          if (algo != "summa" && (g.rows == 1 || c.m == 130 || dt == Dtype::c32)) continue;
          AlgoOptions ao;
          if (algo == "caps") ao.caps_steps = parse_caps_steps("X");
          RunSpec s;
          s.algo_opts = ao;
          s.m = c.m, s.n = c.n, s.k = c.k;
          s.dtype = dt;
          s.algo = *parse_algorithm(algo);
          on_device(s, algo == "caps" ? "cublas" : "gpu-winograd");
          s.fill = Fill::integer;
          s.verify = Verify::full;
          s.alpha = 2.0;
          s.beta = is_complex(dt) ? std::complex<double>(1, -1) : -3.0;
          s.repeat = 2;
          s.threads = 1;
          s.inputs_from_host = true;
          s.stage_rows = g.rows, s.stage_cols = g.cols;
          s.engine_opts.levels = 1;
          s.engine_opts.tau1 = s.engine_opts.tau2 = 16;
          const std::string what = algo + " " + std::to_string(g.rows) + "x" + std::to_string(g.cols) + " panels " +
                                   to_string(dt) + " " +
                                   std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) +
                                   " P=" + std::to_string(P);
          RunReport r;
          if (std::getenv("DISTMM_TEST_PROGRESS")) std::fprintf(stderr, "[%d] %s\n", Comm::world().rank(), what.c_str());
          try {
            r = run(Comm::world(), s);
          } catch (const UsageError& e) {
            if (algo == "caps") continue;  // dealt steps need leaves this shape lacks
            ADD_FAILURE() << what << ": " << e.what();
            continue;
          }
          EXPECT_TRUE(r.passed) << what;
          EXPECT_EQ(r.max_abs, 0.0) << what;
          // the stages' means add exactly; their maxima bound the busiest rank's total
          EXPECT_DOUBLE_EQ(r.words_mean, r.analytic_words_mean) << what;
          EXPECT_LE(r.words_max, r.analytic_words_max) << what;
          if (r.stages > 1) {
            ++streamed;
            EXPECT_EQ(r.stages, std::min<index_t>(g.rows, c.m) * std::min<index_t>(g.cols, c.n)) << what;
            EXPECT_NE(r.layout.find("streamed"), std::string::npos) << what << ": " << r.layout;
            // what waited on the host link: intervals within a repetition
            const double longest = *std::max_element(r.times.begin(), r.times.end());
            for (double t : {r.exposed_load_seconds, r.exposed_store_seconds}) {
              EXPECT_GE(t, 0.0) << what;
              EXPECT_LE(t, longest) << what;
            }
          } else {
            bool said = false;
            for (const std::string& n : r.notes) said = said || n.find("not streamed") != std::string::npos;
            EXPECT_TRUE(said) << what << ": one stage without a note";
          }
        }
  EXPECT_GT(streamed, 0);

  // Files: A and B read from .npy (streamed in 3 panels and not), the product written to --out
  // by both, byte for byte the same.
  // one directory for all ranks (rank 0's pid): MPI-IO opens a file collectively, by one name
  int pid = int(getpid());
  MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  const std::string dir = "/tmp/distmm_stream_" + std::to_string(pid);
  const index_t m = 71, n = 37, k = 53;
  auto npy = [](const std::string& path, index_t rows, index_t cols, int salt) {
    std::ofstream f(path, std::ios::binary);
    f << make_npy_header(Dtype::f64, rows, cols, true);
    for (index_t j = 0; j < cols; ++j)
      for (index_t i = 0; i < rows; ++i) {
        const double v = double((i * 7 + j * 13 + salt) % 9) - 4;
        f.write(reinterpret_cast<const char*>(&v), sizeof v);
      }
  };
  if (Comm::world().rank() == 0) {
    std::system(("mkdir -p " + dir).c_str());
    npy(dir + "/a.npy", m, k, 1), npy(dir + "/b.npy", k, n, 2);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  auto write = [&](StageGrid g, const std::string& path) {
    RunSpec s;
    s.m = m, s.n = n, s.k = k;
    s.a_path = dir + "/a.npy", s.b_path = dir + "/b.npy";
    s.algo = Algorithm::summa;
    on_device(s, "cublas");
    s.verify = Verify::full;
    s.stage_rows = g.rows, s.stage_cols = g.cols;
    s.out_path = path;
    RunReport r = run(Comm::world(), s);
    EXPECT_TRUE(r.passed);
    EXPECT_EQ(r.max_abs, 0.0);
    EXPECT_EQ(r.stages, g.rows * g.cols);
  };
  if (std::getenv("DISTMM_TEST_PROGRESS")) std::fprintf(stderr, "[%d] files\n", Comm::world().rank());
  write({1, 1}, dir + "/one.npy");
  write({3, 2}, dir + "/three.npy");
  if (Comm::world().rank() == 0) {
    auto bytes = [](const std::string& p) {
      std::ifstream f(p, std::ios::binary);
      return std::string(std::istreambuf_iterator<char>(f), {});
    };
    const std::string one = bytes(dir + "/one.npy"), three = bytes(dir + "/three.npy");
    EXPECT_GT(one.size(), std::size_t(m * n) * 8u);
    EXPECT_EQ(one, three);
    std::system(("rm -rf " + dir).c_str());
  }
}
