#include "run.hpp"

#include <omp.h>
#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>

#include "../cuda/device_info.hpp"
#include "../node/blas.hpp"
#include "../src/core/json.hpp"
#include "../src/core/system.hpp"
#include "../src/core/timer.hpp"
#include "bounds.hpp"
#include "distribution.hpp"
#include "npy_io.hpp"
#include "stream_plan.hpp"

namespace distmm {

int default_threads() { return std::max(1, hardware_threads() / std::max(1, node_local_size())); }

const char* to_string(Verify v) {
  return v == Verify::none ? "none" : v == Verify::freivalds ? "freivalds" : "full";
}

namespace {

void validate(const RunSpec& o) {
  auto dim = [](const char* name, index_t v) {
    if (v < 1)
      throw UsageError(std::string("--") + name + " must be at least 1, got " + std::to_string(v));
    if (v > INT32_MAX)
      throw UsageError(std::string("--") + name + " " + std::to_string(v) +
                       " exceeds 2^31-1, the largest dimension BLAS takes: use a smaller size");
  };
  dim("m", o.m), dim("n", o.n), dim("k", o.k);
  if (o.repeat < 1) throw UsageError("--repeat must be at least 1");
  if (o.warmup < 0) throw UsageError("--warmup must be 0 or more");
  if (o.trials < 1) throw UsageError("--trials must be at least 1");
  if (o.threads < 0) throw UsageError("--threads must be 1 or more (0 = automatic)");
}

const char* op_text(Op o) { return o == Op::N ? "N" : o == Op::T ? "T" : "C"; }

struct Files {
  NpyInfo a, b, c;
};

// Shapes and dtype from the input files; checks that they fit together (GEMM semantics).
void plan_from_files(RunSpec& o, const Comm& world, Files& f) {
  if (o.a_path.empty() != o.b_path.empty())
    throw UsageError("--a and --b come together: give both input files");
  if (o.a_path.empty()) {
    if (!o.c_path.empty()) throw UsageError("--c needs --a and --b");
    if (o.transa != Op::N || o.transb != Op::N)
      throw UsageError("--transa/--transb apply to --a/--b files");
    if (!o.out_path.empty()) throw UsageError("--out writes the product of --a and --b files: give them too");
    return;
  }
  if (o.out_path.empty()) throw UsageError("--a/--b need --out FILE.npy for the product");
  NpyInfo& a = f.a = npy_inspect(o.a_path, world);
  NpyInfo& b = f.b = npy_inspect(o.b_path, world);
  const bool ta = o.transa != Op::N, tb = o.transb != Op::N;
  const index_t am = ta ? a.cols : a.rows, ak = ta ? a.rows : a.cols;
  const index_t bk = tb ? b.cols : b.rows, bn = tb ? b.rows : b.cols;
  if (ak != bk)
    throw UsageError("inner dimensions differ: op(A) from " + o.a_path + " is " + std::to_string(am) +
                     " x " + std::to_string(ak) + " but op(B) from " + o.b_path + " is " +
                     std::to_string(bk) + " x " + std::to_string(bn) + ": check the files or --transa/--transb");
  if (a.dtype != b.dtype)
    throw UsageError(o.a_path + " holds " + to_string(a.dtype) + " but " + o.b_path + " holds " +
                     to_string(b.dtype) + ": convert one with numpy's astype");
  if (o.dtype && *o.dtype != a.dtype)
    throw UsageError(std::string("--dtype ") + to_string(*o.dtype) + " but the files hold " +
                     to_string(a.dtype) + ": drop --dtype or convert the files");
  o.dtype = a.dtype;
  o.m = am, o.n = bn, o.k = ak;
  // --out must not be one of the inputs: the same file, however it is named (rank 0 checks).
  std::string same;
  struct stat out_st;
  if (world.rank() == 0 && stat(o.out_path.c_str(), &out_st) == 0)
    for (const auto& [flag, path] : {std::pair<const char*, const std::string*>{"--a", &o.a_path},
                                     {"--b", &o.b_path}, {"--c", &o.c_path}}) {
      struct stat in_st;
      if (same.empty() && !path->empty() && stat(path->c_str(), &in_st) == 0 && in_st.st_dev == out_st.st_dev &&
          in_st.st_ino == out_st.st_ino)
        same = "--out " + o.out_path + " is the same file as " + flag + " " + *path +
               ": choose another output path (the input would be overwritten)";
    }
  world.agree(same);
  if (!o.c_path.empty()) {
    if (o.beta == 0.0) throw UsageError("--c " + o.c_path + " is used only with --beta: add e.g. --beta 1");
    f.c = npy_inspect(o.c_path, world);
    if (f.c.rows != am || f.c.cols != bn)
      throw UsageError(o.c_path + " is " + std::to_string(f.c.rows) + " x " + std::to_string(f.c.cols) +
                       " but op(A) op(B) is " + std::to_string(am) + " x " + std::to_string(bn));
    if (f.c.dtype != a.dtype)
      throw UsageError(o.c_path + " holds " + to_string(f.c.dtype) + " but the inputs hold " +
                       to_string(a.dtype) + ": convert it with numpy's astype");
  }
}

// alpha and beta as the dtype's real type holds them: a part beyond its largest number would
// overflow, and one below its smallest normal number would be flushed to 0 or lose digits, so
// that the product would not be the one asked for (and the report would still name the scalar).
void check_scalars_fit(const RunSpec& o, Dtype dt) {
  dispatch(dt, [&](auto tag) {
    using R = real_t<typename decltype(tag)::type>;
    const double largest = std::numeric_limits<R>::max(), smallest = std::numeric_limits<R>::min();
    for (const auto& [flag, v] : {std::pair{"--alpha", o.alpha}, std::pair{"--beta", o.beta}})
      for (const double part : {v.real(), v.imag()}) {
        char text[160];
        if (std::abs(part) > largest)
          std::snprintf(text, sizeof text, "%s %g overflows %s (largest magnitude %g)", flag, part,
                        to_string(dt), largest);
        else if (part != 0 && std::abs(part) < smallest)
          std::snprintf(text, sizeof text, "%s %g is below %s's smallest normal number %g (it would be flushed "
                        "to 0 or lose digits)", flag, part, to_string(dt), smallest);
        else
          continue;
        throw UsageError(std::string(text) + ": give a scalar within the dtype's range, or a wider --dtype");
      }
  });
}

// alpha or beta as T: the real part for real types (checked to be real before).
template <class T>
T scalar(std::complex<double> v) {
  if constexpr (is_complex_v<T>) return T(static_cast<real_t<T>>(v.real()), static_cast<real_t<T>>(v.imag()));
  else return static_cast<T>(v.real());
}

// Names non-finite inputs before any work (file coordinates for transposed files): refused
// unless --allow-nonfinite, and then verified in full. Returns the verification to run.
template <class T>
Verify check_inputs(const RunSpec& o, const Comm& world, const DistMatrix<T>& A, const DistMatrix<T>& B,
                    const DistMatrix<T>* C0, RunReport& rec, std::size_t budget) {
  const Dtype dt = dtype_of<T>();
  struct Operand {
    const char* name;
    const DistMatrix<T>* M;
    bool transposed;
  };
  index_t nonfinite_inputs = 0;
  for (const Operand& in : {Operand{"A", &A, o.transa != Op::N}, Operand{"B", &B, o.transb != Op::N},
                            Operand{"C0", C0, false}}) {
    if (!in.M) continue;
    const NonFinite nf = find_nonfinite(*in.M, world);
    if (!nf.any()) continue;
    nonfinite_inputs += nf.nans + nf.infs;
    const index_t r = in.transposed ? nf.first_col : nf.first_row, c = in.transposed ? nf.first_row : nf.first_col;
    std::string what;
    if (nf.nans) what = std::to_string(nf.nans) + " NaN" + (nf.nans > 1 ? "s" : "");
    if (nf.infs) what += (what.empty() ? "" : " and ") + std::to_string(nf.infs) + " Inf" + (nf.infs > 1 ? "s" : "");
    const std::string msg = std::string(in.name) + " has " + what + ", first at row " + std::to_string(r) +
                            ", column " + std::to_string(c) + " (counting from 0)";
    if (!o.allow_nonfinite) throw UsageError(msg + ": fix the input, or pass --allow-nonfinite");
    rec.notes.push_back(msg);
  }
  Verify verify = o.verify;
  if (nonfinite_inputs > 0 && verify == Verify::freivalds) {
    // Freivalds' sums of products turn any NaN or Inf into NaN: only the full comparison, by
    // position, can check such a product.
    if (double(verify_full_bytes(o.m, o.n, o.k, dt)) > double(budget))
      throw UsageError("the inputs hold NaN or Inf and Freivalds' check cannot verify such a product; "
                       "--verify full needs " + format_bytes(double(verify_full_bytes(o.m, o.n, o.k, dt))) +
                       " on rank 0: use --verify none, or smaller inputs");
    verify = Verify::full;
    rec.notes.push_back("non-finite inputs: verified in full (NaN/Inf positions against the reference's) "
                        "instead of by Freivalds' check");
  }
  return verify;
}

// Phase times (max and mean over ranks, same names on every rank) and the measured
// communication of the last repetition.
// Phase seconds `t` (of `names`) of the last repetition and its measured communication: max
// and mean over ranks.
void collect_measurements(const Comm& world, const std::vector<std::string>& names, std::vector<double> t,
                          const CommCounters& counted, RunReport& rec) {
  {
    t.resize(names.size(), 0.0);
    std::vector<double> mx = t, sum = t;
    if (!t.empty()) {
      MPI_Allreduce(t.data(), mx.data(), int(t.size()), MPI_DOUBLE, MPI_MAX, world.get());
      MPI_Allreduce(t.data(), sum.data(), int(t.size()), MPI_DOUBLE, MPI_SUM, world.get());
    }
    for (std::size_t i = 0; i < names.size(); ++i) rec.phases.push_back({names[i], mx[i], sum[i] / world.size()});
  }

  // Measured communication of the last repetition: max and mean over ranks.
  double mine[2] = {double(counted.words_sent), double(counted.messages_sent)}, sum[2], mx[2];
  MPI_Allreduce(mine, sum, 2, MPI_DOUBLE, MPI_SUM, world.get());
  MPI_Allreduce(mine, mx, 2, MPI_DOUBLE, MPI_MAX, world.get());
  rec.words_max = mx[0], rec.messages_max = mx[1];
  rec.words_mean = sum[0] / world.size(), rec.messages_mean = sum[1] / world.size();
}
void collect_measurements(const Comm& world, const DistAlgorithm& algo, const CommCounters& counted,
                          RunReport& rec) {
  collect_measurements(world, algo.phase_names(), algo.phase_seconds(), counted, rec);
}

// The tolerance follows what ran: the engine's levels on every rank (the largest counts) and
// the algorithm's Strassen-like steps; one value, shared, so every rank decides alike.
double error_growth(const Comm& world, const DistAlgorithm& algo, const Engine& engine, RunReport& rec) {
  rec.engine_levels_run = world.allreduce_max_uncounted(engine.levels_run());
  rec.error_growth = world.allreduce_max_uncounted(engine.error_growth()) * algo.error_growth();
  return rec.error_growth;
}

// The inputs in host memory, in the algorithm's layout: read from the files or generated (C0
// only with beta != 0).
template <class T>
struct HostInputs {
  DistMatrix<T> A, B, C0;
};
template <class T>
HostInputs<T> host_inputs(const RunSpec& o, const Comm& world, const Piece& pa, const Piece& pb, const Piece& pc,
                          const Files& files) {
  HostInputs<T> in{DistMatrix<T>(o.m, o.k, pa), DistMatrix<T>(o.k, o.n, pb), {}};
  if (!o.a_path.empty()) {
    npy_read_piece(files.a, o.transa, in.A, world);
    npy_read_piece(files.b, o.transb, in.B, world);
  } else {
    fill_random(in.A, o.seed, Stream::A, o.fill);
    fill_random(in.B, o.seed, Stream::B, o.fill);
  }
  if (o.beta != 0.0) {
    in.C0 = DistMatrix<T>(o.m, o.n, pc);
    if (!o.c_path.empty()) npy_read_piece(files.c, Op::N, in.C0, world);
    else fill_random(in.C0, o.seed, Stream::C, o.fill);
  }
  return in;
}
template <class T>
HostInputs<T> host_inputs(const RunSpec& o, const Comm& world, const DistAlgorithm& algo, const Files& files) {
  return host_inputs<T>(o, world, algo.piece_a(), algo.piece_b(), algo.piece_c(), files);
}

// The verification's figures, and one collective verdict.
void record_verdict(const VerifyResult& v, const Comm& world, RunReport& rec) {
  rec.verify = v.method;
  rec.residual = v.residual;
  rec.tolerance = v.tolerance;
  rec.rel_frobenius = v.rel_frobenius;
  rec.max_abs = v.max_abs;
  rec.passed = !world.any(!v.passed);
  if (v.nonfinite_matched > 0)
    rec.notes.push_back(std::to_string(v.nonfinite_matched) +
                        " NaN/Inf entries of C, each where the reference has one (compared by position)");
}

// A host block for C with its pages touched (zeros, by all threads): a caller's output is there
// before the product, so the timed copies back pay for the copy, not the first touch.
template <class T>
DistMatrix<T> touched_zeros(index_t m, index_t n, const Piece& piece) {
  DistMatrix<T> C(m, n, piece);
  T* c = C.local.data();
  const index_t rows = C.local.rows(), cols = C.local.cols(), ld = C.local.ld();
#pragma omp parallel for schedule(static)
  for (index_t j = 0; j < cols; ++j) std::fill(c + j * ld, c + j * ld + rows, T(0));
  return C;
}

// The host product's verdict (Freivalds or a full check, the tolerance from what ran: growth),
// then the file: the product reaches it only when verified (or unverified by request).
template <class T>
void verify_and_write(const RunSpec& o, const Comm& world, Verify verify, const DistMatrix<T>& A,
                      const DistMatrix<T>& B, const DistMatrix<T>& C, const DistMatrix<T>* C0, T alpha, T beta,
                      double growth, RunReport& rec, NpyOutput* out) {
  if (verify != Verify::none) {
    const double tol = verify_tolerance(dtype_of<T>(), o.k, growth);
    const VerifyResult v =
        verify == Verify::full
            ? verify_full(A, B, C, alpha, beta, C0, tol, world, growth > 1)
            : verify_freivalds(A, B, C, alpha, beta, C0, o.trials, o.seed + 1000003, tol, world, growth > 1);
    record_verdict(v, world, rec);
  }
  if (out && rec.passed) {
    out->write(C);
    out->commit();
  }
}

template <class T>
void run_typed(const RunSpec& o, const Comm& world, DistAlgorithm& algo, Engine& engine,
               RunReport& rec, const Files& files, NpyOutput* out, std::size_t budget) {
  const bool keep_c0 = o.beta != 0.0;

  auto [A, B, C0] = host_inputs<T>(o, world, algo, files);
  DistMatrix<T> C(o.m, o.n, algo.piece_c());

  const Verify verify = check_inputs(o, world, A, B, keep_c0 ? &C0 : nullptr, rec, budget);

  const T alpha = scalar<T>(o.alpha), beta = scalar<T>(o.beta);
  CommCounters counted;
  for (int r = -o.warmup; r < o.repeat; ++r) {
    if (keep_c0) std::copy(C0.local.data(), C0.local.data() + C0.local.size(), C.local.data());
    comm_counters() = CommCounters{};
    if (o.repetition_started) o.repetition_started();
    world.barrier();
    double t0 = MPI_Wtime();
    algo.multiply(engine, alpha, A.local, B.local, beta, C.local);
    double t = world.allreduce_max_uncounted(MPI_Wtime() - t0);
    counted = comm_counters();
    if (r >= 0) rec.times.push_back(t);
  }

  collect_measurements(world, algo, counted, rec);

  // The tolerance follows what ran: the engine's levels on every rank (the largest counts) and
  // the algorithm's Strassen-like steps; one value, shared, so every rank decides alike.
  const double growth = error_growth(world, algo, engine, rec);
  verify_and_write(o, world, verify, A, B, C, keep_c0 ? &C0 : nullptr, alpha, beta, growth, rec, out);
}


// The device-resident run (DeviceSpace): A, B and C (and C0) live in the rank's GPU memory for
// the whole run. Random inputs are generated there (the host generator's values, by global
// index); files are read once on the host and copied once; C comes back only for --out or a
// full verification. The timed multiply is the algorithm's device multiply with data resident,
// as `distmm gpu-bench` times a product; loading and storing are timed apart.
template <class T>
void run_typed_device(const RunSpec& o, const Comm& world, DistAlgorithm& algo, DeviceSpace& sp,
                      Engine& engine, RunReport& rec, const Files& files, NpyOutput* out,
                      std::size_t budget) {
  const bool keep_c0 = o.beta != 0.0;
  Verify verify = o.verify;
  // Every device allocation of the run before any transfer: a rank that cannot allocate says so
  // and all leave together (none is left waiting in a collective).
  DeviceDistMatrix A, B, C, C0;
  std::string failed;
  try {
    algo.reserve_device(sp, dtype_of<T>());
    // A and B where the algorithm gathers them (SUMMA's whole-k), else in blocks of their own.
    auto input = [&](DistAlgorithm::Input which, index_t rows, index_t cols, const Piece& p) {
      if (void* home = algo.device_home_address(which, dtype_of<T>()))
        return DeviceDistMatrix(rows, cols, p, home, algo.device_home(which)->ld);
      return DeviceDistMatrix(sp, rows, cols, p, sizeof(T));
    };
    A = input(DistAlgorithm::Input::a, o.m, o.k, algo.piece_a());
    B = input(DistAlgorithm::Input::b, o.k, o.n, algo.piece_b());
    C = DeviceDistMatrix(sp, o.m, o.n, algo.piece_c(), sizeof(T));
    if (keep_c0) C0 = DeviceDistMatrix(sp, o.m, o.n, algo.piece_c(), sizeof(T));
  } catch (const std::exception& e) {
    failed = e.what();
  }
  failed = world.first_error(failed);
  if (!failed.empty()) throw UsageError(failed);
  auto upload = [&](const DistMatrix<T>& h, DeviceDistMatrix& d) {
    sp.upload(d.data<T>(), d.ld, h.local.data(), h.local.ld(), h.local.rows(), h.local.cols(), sizeof(T));
  };
  auto generate = [&](DeviceDistMatrix& d, Stream stream) {
    for_each_run_block(d.piece, [&](index_t lr, index_t lc, index_t gr, index_t gc, index_t nr, index_t nc) {
      sp.fill_random(d.data<T>() + lr + lc * d.ld, d.ld, nr, nc, gr, gc, o.seed, stream, o.fill, dtype_of<T>());
    });
  };
  double t0 = 0;
  // The inputs the check compares with, taken before the multiply (a multiply that wrote into
  // its inputs, e.g. into A where SUMMA gathers around it, cannot pass): the host's own for a
  // full check of host inputs, else copies from the device, or Freivalds' reference.
  DistMatrix<T> va, vb, vc0;
  const bool host_in = !o.a_path.empty() || o.inputs_from_host;
  if (host_in) {
    // Host inputs (files, or --from-host): read or generated on the host, then timed from the
    // first copy onto the GPUs.
    auto [ha, hb, hc0] = host_inputs<T>(o, world, algo, files);
    verify = check_inputs(o, world, ha, hb, keep_c0 ? &hc0 : nullptr, rec, budget);
    world.barrier();
    t0 = MPI_Wtime();
    upload(ha, A), upload(hb, B);
    if (keep_c0) upload(hc0, C0);
    if (verify == Verify::full) va = std::move(ha), vb = std::move(hb), vc0 = std::move(hc0);
  } else {
    world.barrier();
    t0 = MPI_Wtime();
    generate(A, Stream::A), generate(B, Stream::B);  // finite by construction
    if (keep_c0) generate(C0, Stream::C);
  }
  sp.synchronize();
  rec.load_seconds = world.allreduce_max_uncounted(MPI_Wtime() - t0);
  auto host = [&](const DeviceDistMatrix& d) {
    DistMatrix<T> h(d.rows, d.cols, d.piece);
    sp.download(h.local.data(), h.local.ld(), d.data<T>(), d.ld, d.piece.rows(), d.piece.cols(), sizeof(T));
    return h;
  };
  const T alpha = scalar<T>(o.alpha), beta = scalar<T>(o.beta);
  if (verify == Verify::full && !host_in) {
    va = host(A), vb = host(B);
    if (keep_c0) vc0 = host(C0);
  }
  FreivaldsReference<T> reference;
  if (verify == Verify::freivalds)
    reference = freivalds_reference_device(sp, A, B, alpha, beta, keep_c0 ? &C0 : nullptr, o.trials, o.seed + 1000003,
                                       o.n, world);

  const Piece& pc = algo.piece_c();
  const MultiplyCall call{dtype_of<T>(), &alpha, {A.data<T>(), A.piece.rows(), A.piece.cols(), A.ld},
                          {B.data<T>(), B.piece.rows(), B.piece.cols(), B.ld}, &beta, C.data<T>(),
                          pc.rows(), pc.cols(), C.ld};
  CommCounters counted;
  for (int r = -o.warmup; r < o.repeat; ++r) {
    if (keep_c0) sp.copy(C.data<T>(), C.ld, C0.data<T>(), C0.ld, pc.rows(), pc.cols(), DeviceSpace::Lane::compute);
    comm_counters() = CommCounters{};
    if (o.repetition_started) o.repetition_started();
    if (o.device_repetition_started) o.device_repetition_started(sp, call);
    sp.synchronize();
    world.barrier();
    t0 = MPI_Wtime();
    algo.multiply_device(sp, call);
    sp.synchronize();
    double t = world.allreduce_max_uncounted(MPI_Wtime() - t0);
    counted = comm_counters();
    if (r >= 0) rec.times.push_back(t);
  }
  collect_measurements(world, algo, counted, rec);
  const double growth = error_growth(world, algo, engine, rec);

  // C (and, for a full check, the inputs) back to the host only where it is needed.
  DistMatrix<T> hC;
  const bool need_c = (out != nullptr) || verify == Verify::full || o.inputs_from_host;
  if (need_c) {
    // The host C is there, its pages touched, before the timing, as a caller's output (and
    // cuBLASXt's in xt-bench) would be: the store times the copy, not the first touch.
    hC = touched_zeros<T>(o.m, o.n, pc);
    world.barrier();
    t0 = MPI_Wtime();
    sp.download(hC.local.data(), hC.local.ld(), C.data<T>(), C.ld, pc.rows(), pc.cols(), sizeof(T));
    rec.store_seconds = world.allreduce_max_uncounted(MPI_Wtime() - t0);
  }
  if (verify != Verify::none) {
    const double tol = verify_tolerance(dtype_of<T>(), o.k, growth);
    VerifyResult v;
    if (verify == Verify::full)
      v = verify_full(va, vb, hC, alpha, beta, keep_c0 ? &vc0 : nullptr, tol, world, growth > 1);
    else
      v = verify_freivalds_device(sp, reference, C, tol, world, growth > 1);
    record_verdict(v, world, rec);
  }
  if (out && rec.passed) {
    out->write(hC);
    out->commit();
  }
}


// A host-resident run streamed in panels (stream_plan.hpp): every timed repetition goes from
// host memory to host memory, as a caller with host matrices (or cuBLASXt) has it. The first
// stage's A and B come in; then while stage s multiplies, stage s + 1's new operands (its row
// panel of A, its column panel of B on the first row, its C0) come in and stage s - 1's C goes
// out on the transfer lane. A row panel of A and a stage's C are double-buffered; B stays whole
// on the GPU. The host blocks are page-locked before the timing (a cuBLASXt caller's matrices
// are pinned too), so the copy engine moves them beside the products.
template <class T>
void run_typed_streamed(const RunSpec& o, const Comm& world, const StreamPlan& plan, DeviceSpace& sp,
                        Engine& engine, RunReport& rec, const Files& files, NpyOutput* out, std::size_t budget) {
  using Lane = DeviceSpace::Lane;
  const bool keep_c0 = o.beta != 0.0;
  const int S = plan.stages();
  index_t a_rows = 0, c_size = 0;
  for (int s = 0; s < S; ++s)
    a_rows = std::max(a_rows, plan.algo(s).piece_a().rows()),
    c_size = std::max(c_size, plan.algo(s).piece_c().rows() * plan.algo(s).piece_c().cols());
  DeviceBlock dB, dA[2], dC[2];
  std::string failed;
  try {
    dB = sp.alloc_elems<T>(plan.b.rows() * plan.b.cols());
    for (int i = 0; i < 2; ++i) {
      if (i < std::min(plan.rows, 2)) dA[i] = sp.alloc_elems<T>(a_rows * plan.a.cols());
      if (i < std::min(S, 2)) dC[i] = sp.alloc_elems<T>(c_size);
    }
    for (const auto& a : plan.algos) a->reserve_device(sp, dtype_of<T>());
  } catch (const std::exception& e) {
    failed = e.what();
  }
  failed = world.first_error(failed);
  if (!failed.empty()) throw UsageError(failed);

  auto [ha, hb, hc0] = host_inputs<T>(o, world, plan.a, plan.b, plan.c, files);
  const Verify verify = check_inputs(o, world, ha, hb, keep_c0 ? &hc0 : nullptr, rec, budget);
  DistMatrix<T> hC = touched_zeros<T>(o.m, o.n, plan.c);  // as a caller's output would be
  std::vector<DeviceSpace::HostPin> pins;
  bool pinned = true;
  for (DistMatrix<T>* M : {&ha, &hb, &hC, keep_c0 ? &hc0 : nullptr}) {
    // Blocks under 1 MiB stay pageable: pinning gains them nothing, and small blocks share
    // pages, which cudaHostRegister will not register twice.
    const std::size_t bytes = M ? std::size_t(M->local.size()) * sizeof(T) : 0;
    if (bytes < (std::size_t(1) << 20)) continue;
    pins.push_back(sp.pin_host(M->local.data(), bytes));
    pinned = pinned && bool(pins.back());
  }
  if (world.any(!pinned))
    rec.notes.push_back("host blocks not page-locked on some rank (cudaHostRegister refused, e.g. the locked-memory "
                        "limit: ulimit -l): their copies were staged by the driver, at a lower rate");

  const T alpha = scalar<T>(o.alpha), beta = scalar<T>(o.beta);
  const int in_mark = DeviceSpace::kMarks, done_compute = in_mark + 2, done_comm = in_mark + 3;
  const int started = in_mark + 4, first_in = in_mark + 5, ended = in_mark + 6;  // timing only
  // The first stage in two k-parts (k_prefix): its product starts when the first is in, and the
  // rest, marked rest_in, comes in under that product (as the later stages' operands do).
  const int rest_in = in_mark + 7;
  const std::optional<KPrefix> prefix = o.split_first_stage ? plan.algo(0).k_prefix() : std::nullopt;
  auto ld_of = [](index_t rows) { return std::max<index_t>(rows, 1); };
  const index_t ld_b = ld_of(plan.b.rows());
  // Host and device blocks of stage s's operands: A's row panel, B's column panel, C's block.
  auto host_a = [&](int s, DistMatrix<T>& M) { return M.local.data() + plan.a_row0[std::size_t(s / plan.cols)]; };
  auto host_c = [&](int s, DistMatrix<T>& M) {
    return M.local.data() + plan.c_row0[std::size_t(s / plan.cols)] + plan.c_col0[std::size_t(s % plan.cols)] * M.local.ld();
  };
  auto dev_b = [&](int s) { return dB.as<T>() + plan.b_col0[std::size_t(s % plan.cols)] * ld_b; };
  // Queues stage s's copies: of A its columns [a0, a1), of B its rows [b0, b1) (a row panel's A
  // comes with its first stage, a column panel's B with the first row's), and C0 where c0.
  auto load_part = [&](int s, index_t a0, index_t a1, index_t b0, index_t b1, bool c0) {
    const Piece &pa = plan.algo(s).piece_a(), &pb = plan.algo(s).piece_b(), &pc = plan.algo(s).piece_c();
    const int r = s / plan.cols, c = s % plan.cols;
    if (c == 0)
      sp.upload_async(dA[r % 2].as<T>() + a0 * ld_of(pa.rows()), ld_of(pa.rows()), host_a(s, ha) + a0 * ha.local.ld(),
                      ha.local.ld(), pa.rows(), std::min(a1, pa.cols()) - a0, sizeof(T));
    if (r == 0)
      sp.upload_async(dev_b(s) + b0, ld_b, hb.local.data() + plan.b_col0[std::size_t(c)] * hb.local.ld() + b0,
                      hb.local.ld(), std::min(b1, pb.rows()) - b0, pb.cols(), sizeof(T));
    if (keep_c0 && c0)
      sp.upload_async(dC[s % 2].as<T>(), ld_of(pc.rows()), host_c(s, hc0), hc0.local.ld(), pc.rows(), pc.cols(),
                      sizeof(T));
  };
  const index_t all = std::numeric_limits<index_t>::max();
  auto load = [&](int s) {  // what stage s needs first, marked in_mark + s % 2
    if (s == 0 && prefix) {
      load_part(0, 0, prefix->a_cols, 0, prefix->b_rows, true);
      sp.mark(Lane::transfer, in_mark);
      sp.mark(Lane::transfer, first_in);
      load_part(0, prefix->a_cols, all, prefix->b_rows, all, false);
      sp.mark(Lane::transfer, rest_in);
    } else {
      load_part(s, 0, all, 0, all, true);
      sp.mark(Lane::transfer, in_mark + s % 2);
      if (s == 0) sp.mark(Lane::transfer, first_in);
    }
  };
  CommCounters counted;
  std::vector<double> exposed_load, exposed_store;
  std::vector<double> phases(plan.algo(0).phase_names().size(), 0.0);
  for (int rep = -o.warmup; rep < o.repeat; ++rep) {
    comm_counters() = CommCounters{};
    if (o.repetition_started) o.repetition_started();
    sp.synchronize();
    world.barrier();
    const double t0 = MPI_Wtime();
    sp.mark(Lane::transfer, started);
    load(0);
    for (int s = 0; s < S; ++s) {
      DistAlgorithm& algo = plan.algo(s);
      const Piece &pa = algo.piece_a(), &pb = algo.piece_b(), &pc = algo.piece_c();
      if (s + 1 < S) {
        // stage s + 1's buffers were stage s - 1's (C) or row r - 1's (A): those products are done
        sp.wait_mark(Lane::transfer, done_compute), sp.wait_mark(Lane::transfer, done_comm);
        load(s + 1);
      }
      sp.wait_mark(Lane::compute, in_mark + s % 2), sp.wait_mark(Lane::comm, in_mark + s % 2);
      // the previous stage (another algorithm instance) is done on both lanes before this one starts
      sp.comm_waits_for_compute(), sp.compute_waits_for_comm();
      const MultiplyCall call{dtype_of<T>(), &alpha,
                              {dA[(s / plan.cols) % 2].as<T>(), pa.rows(), pa.cols(), ld_of(pa.rows())},
                              {dev_b(s), pb.rows(), pb.cols(), ld_b}, &beta, dC[s % 2].as<T>(),
                              pc.rows(), pc.cols(), ld_of(pc.rows()), s == 0 && prefix ? rest_in : -1};
      algo.multiply_device(sp, call);
      if (rep == o.repeat - 1)  // every stage's phases (the stages' algorithms are of one kind)
        for (std::size_t i = 0; i < std::min(phases.size(), algo.phase_seconds().size()); ++i)
          phases[i] += algo.phase_seconds()[i];
      sp.mark(Lane::compute, done_compute), sp.mark(Lane::comm, done_comm);
      sp.wait_mark(Lane::transfer, done_compute), sp.wait_mark(Lane::transfer, done_comm);
      sp.download_async(host_c(s, hC), hC.local.ld(), dC[s % 2].as<T>(), ld_of(pc.rows()), pc.rows(), pc.cols(),
                        sizeof(T));
    }
    sp.mark(Lane::transfer, ended);
    sp.synchronize();
    const double t = world.allreduce_max_uncounted(MPI_Wtime() - t0);
    counted = comm_counters();
    if (rep >= 0) {
      rec.times.push_back(t);
      // the last C's copy waited for both lanes' last work
      exposed_load.push_back(sp.seconds_between(started, first_in));
      exposed_store.push_back(std::min(sp.seconds_between(done_compute, ended), sp.seconds_between(done_comm, ended)));
    }
  }
  rec.exposed_load_seconds = world.allreduce_max_uncounted(median(exposed_load));
  rec.exposed_store_seconds = world.allreduce_max_uncounted(median(exposed_store));
  pins.clear();
  collect_measurements(world, plan.algo(0).phase_names(), phases, counted, rec);
  const double growth = error_growth(world, plan.algo(0), engine, rec);
  verify_and_write(o, world, verify, ha, hb, hC, keep_c0 ? &hc0 : nullptr, alpha, beta, growth, rec, out);
}

}  // namespace

namespace {

// Everything a run decides before it allocates its matrices: checks, engine, algorithm, memory
// plan and the report's static fields. plan() stops here; run() goes on.
struct Prepared {
  RunSpec o;
  Files files;
  Dtype dt = Dtype::f64;
  std::size_t budget = 0;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<DeviceSpace> space;  // device-resident runs; outlives the algorithm's buffers
  std::unique_ptr<DistAlgorithm> algo;
  StreamPlan stream;  // host inputs on GPUs streamed in panels (stages() > 1), else one stage
  RunReport rec;
};

Prepared prepare(const Comm& world, RunSpec o) {
  Prepared pr;
  Files& files = pr.files;
  plan_from_files(o, world, files);
  validate(o);
  const Dtype dt = o.dtype.value_or(Dtype::f64);
  const EngineInfo& einfo = o.engine ? *o.engine : engine_info("blas");
  if (!is_complex(dt) && (o.alpha.imag() != 0 || o.beta.imag() != 0))
    throw UsageError(std::string("--alpha/--beta have an imaginary part but the dtype is ") +
                     to_string(dt) + ": use --dtype c32 or c64, or real scalars");
  check_scalars_fit(o, dt);
  const bool engine_used = o.algo != Algorithm::scalapack;
  if (engine_used && !einfo.dtypes.contains(dt))
    throw UsageError("engine '" + einfo.name + "' supports " + einfo.dtypes.names() + ", not " +
                     to_string(dt) + ": use --engine blas or --dtype " +
                     to_string(*std::find_if(kAllDtypes.begin(), kAllDtypes.end(),
                                             [&](Dtype d) { return einfo.dtypes.contains(d); })));
  const int P = world.size();
  // A GPU engine keeps the blocks on its GPU for the whole run, unless asked to stage them.
  if (o.emulate_device && (!engine_used || einfo.memory == Memory::device || o.host_staged))
    throw UsageError("an emulated device runs a host engine's products (e.g. --engine blas or winograd) through the "
                     "device path; not " + (engine_used ? einfo.name : std::string("scalapack")) +
                     (o.host_staged ? " with --host-staged" : ""));
  const bool on_gpu = engine_used && ((einfo.memory == Memory::device && !o.host_staged) || o.emulate_device);

  // Refuse what cannot fit before anything is allocated, on every rank alike.
  const std::size_t budget =
      o.mem_limit ? *o.mem_limit : available_memory_bytes() / std::max(1, node_local_size());
  const double operands = (double(o.m) * o.k + double(o.k) * o.n + double(o.m) * o.n * (o.beta != 0.0 ? 2 : 1)) *
                          size_of(dt) / P;
  double least = (double(o.m) * o.k + double(o.k) * o.n + double(o.m) * o.n) * size_of(dt) / P;
  if (!on_gpu && least > double(budget))
    throw UsageError("the operands alone need " + format_bytes(least) + " per rank but " +
                     format_bytes(double(budget)) +
                     " is available per rank: use more ranks, smaller sizes or a larger --mem-limit");

  o.engine_opts.threads = o.threads > 0 ? o.threads : default_threads();
  omp_set_num_threads(o.engine_opts.threads);
  blas_set_threads(o.engine_opts.threads);
  o.engine_opts.device = node_local_rank();  // ranks of a node spread over its GPUs
  auto engine = einfo.make(o.engine_opts);
  o.algo_opts.engine = engine.get();
  o.algo_opts.dtype = dt;
  if (o.mem_limit) o.algo_opts.mem_limit = budget;
  // Ranks that share a GPU share its memory (counted by PCI bus: ranks shown only their own GPU
  // see it as device 0). Every device plan keeps a margin for what is allocated outside it
  // (NCCL's buffers, cuBLAS handles): 512 MiB and 5% of the rank's share.
  const bool gpu_engine = engine_used && einfo.memory == Memory::device;
  const double ranks_per_gpu = gpu_engine ? ranks_sharing_gpu(world) : 1;  // collective
  // An emulated device's memory is the rank's host budget less the host's own copies of the
  // operands (inputs from the host, C back), and needs no margin.
  const double emulated_free = std::max(double(budget) - operands, 0.0);
  auto device_share = [&](double free) {
    return o.emulate_device ? free : free / ranks_per_gpu * 0.95 - double(512 << 20);
  };
  if (on_gpu) {
    o.algo_opts.device_resident = true;
    // The least free memory of any rank, so that every rank plans alike (SUMMA's panel width,
    // CAPS's steps, cuboid's grid depend on it).
    const double free_min =
        -world.allreduce_max_uncounted(-(o.emulate_device ? emulated_free : double(engine->device_free_bytes())));
    const double left = device_share(free_min) - operands;
    o.algo_opts.device_limit = static_cast<std::size_t>(std::max(left, 1.0));
  }
  // Host inputs on GPUs: streamed in panels (--stages; automatic: auto_stages) where the stages'
  // layouts agree and their buffers fit, else loaded, multiplied and stored in turn.
  const bool host_inputs = o.inputs_from_host || !o.a_path.empty();
  if (on_gpu && host_inputs && (o.stage_rows > o.m || o.stage_cols > o.n))
    throw UsageError("--stages " + std::to_string(o.stage_rows) + "x" + std::to_string(o.stage_cols) +
                     " exceeds m x n = " + std::to_string(o.m) + " x " + std::to_string(o.n) +
                     ": use at most m row panels and n column panels (or --stages 1)");
  StageGrid g = auto_stages(o.m, o.n);
  if (o.stage_rows > 0) g = {o.stage_rows, std::max(o.stage_cols, 1)};
  const bool streamed = on_gpu && host_inputs && g.rows * g.cols > 1;
  // --algo auto for a streamed run chooses for the product each stage runs, (m / rows) x (n /
  // cols) x k, not for the whole: at 2 x 2 stages on 2 GPUs a square product's stages have k
  // twice their sides, so cuboid's split of k (a quarter of C per rank reduced) moves half the
  // words of SUMMA's gather of A, where on the whole product the two tie. Measured on 2 x H100
  // in one job (docs/performance.md, session 16), f64 32768 host to host: cuboid 1x1x2 in 2 x 2
  // stages 0.643 s, SUMMA 0.668 s.
  Algorithm kind = o.algo;
  std::string stage_choice;
  if (streamed && o.algo == Algorithm::automatic) {
    const auto pick = make_algorithm(Algorithm::automatic, world,
                                     {(o.m + g.rows - 1) / g.rows, (o.n + g.cols - 1) / g.cols, o.k}, o.algo_opts);
    kind = *parse_algorithm(pick->name());
    stage_choice = "for the stages' products: " + pick->selection();
  }
  // The whole product's algorithm gets its inputs where its buffers want them (device_home);
  // a streamed run's stages get theirs in panel buffers.
  AlgoOptions whole_opts = o.algo_opts;
  whole_opts.inputs_at_home = o.algo_opts.device_resident;
  auto algo = make_algorithm(kind, world, {o.m, o.n, o.k}, whole_opts);
  if (!stage_choice.empty())
    algo->set_selection(algo->selection().empty() ? stage_choice : algo->selection() + "; " + stage_choice);
  std::unique_ptr<DeviceSpace> space;
  if (on_gpu && algo->runs_on_device()) {
    space = o.emulate_device ? make_emulated_device_space(*engine, std::size_t(emulated_free))
                             : make_device_space(*engine, world, int(ranks_per_gpu));  // collective
  }

  StreamPlan stream;
  if (space && streamed) stream = make_stream_plan(*parse_algorithm(algo->name()), world, {o.m, o.n, o.k}, o.algo_opts, g);
  // Not streamed after all (the stages' layouts disagree, or, below, their buffers do not fit):
  // --algo auto chooses for the whole product again, as it would without stages (collective;
  // every rank has decided alike).
  auto unstaged = [&] {
    if (stage_choice.empty()) return;
    algo = make_algorithm(o.algo, world, {o.m, o.n, o.k}, whole_opts);
    stage_choice.clear();
  };
  if (stream.stages() <= 1) unstaged();

  double peak = double(algo->peak_bytes(dt, *engine));
  if (o.beta != 0.0) peak += double(algo->piece_c().rows()) * algo->piece_c().cols() * size_of(dt);
  peak = world.allreduce_max_uncounted(peak);
  if (space) {
    // GPU memory, planned per rank before anything is allocated: the blocks of A, B and C (and
    // C0), the algorithm's buffers and the engine's workspace (A or B not apart where it lives
    // in a buffer: device_home).
    auto bytes = [&](const Piece& p) { return double(p.rows()) * double(p.cols()) * size_of(dt); };
    auto whole_need = [&] {
      using In = DistAlgorithm::Input;
      return world.allreduce_max_uncounted((algo->device_home(In::a) ? 0.0 : bytes(algo->piece_a())) +
                                           (algo->device_home(In::b) ? 0.0 : bytes(algo->piece_b())) +
                                           bytes(algo->piece_c()) * (o.beta != 0.0 ? 2 : 1) +
                                           double(algo->device_extra_bytes(dt, *space)));
    };
    double need = whole_need();
    const double free_min = device_share(-world.allreduce_max_uncounted(-double(space->free_bytes())));
    if (stream.stages() > 1) {
      // B, two stages' A and C, and every stage algorithm's buffers and engine workspace
      double a_rows = 0, c_size = 0, extra = 0;
      for (int s = 0; s < stream.stages(); ++s)
        a_rows = std::max(a_rows, double(stream.algo(s).piece_a().rows())),
        c_size = std::max(c_size, double(stream.algo(s).piece_c().rows()) * double(stream.algo(s).piece_c().cols()));
      for (const auto& a : stream.algos) extra += double(a->device_extra_bytes(dt, *space));
      const double panels = (double(stream.b.rows()) * stream.b.cols() + 2 * (a_rows * stream.a.cols() + c_size)) *
                            size_of(dt);
      const double stream_need = world.allreduce_max_uncounted(panels + extra);
      if (stream_need > free_min) {
        stream = StreamPlan{};
        stream.why_one = "the stages' buffers need " + format_bytes(stream_need) + " of GPU memory per rank, " +
                         format_bytes(std::max(free_min, 0.0)) + " free";
        unstaged();
        need = whole_need();
      } else {
        need = stream_need;  // what the streamed run allocates
      }
    }
    if (need > free_min && o.emulate_device)
      throw UsageError("the emulated device run needs about " + format_bytes(need) + " per rank besides the host's " +
                       format_bytes(operands) + " (" + algo->name() + ", " + engine->name() + ") but " +
                       format_bytes(std::max(free_min, 0.0)) + " is left of " + format_bytes(double(budget)) +
                       " per rank: use more ranks, smaller sizes or a larger --mem-limit");
    if (need > free_min)
      throw UsageError("the device-resident run needs about " + format_bytes(need) + " of GPU memory per rank (" +
                       algo->name() + ", " + engine->name() + ") but " + format_bytes(std::max(free_min, 0.0)) +
                       " is free per rank (after a margin for NCCL and cuBLAS): use more GPUs (ranks)" +
                       (algo->name() == "caps" ? std::string(", DFS steps (--caps-steps D...)") : std::string(", a smaller --panel")) +
                       ", --engine cublas or gpu-strassen-lowmem, or --host-staged");
    peak = need;
    // The communicators (collective) of what will run: the stages' algorithms when streaming,
    // else the algorithm (NCCL's take a while each, and hold GPU memory).
    if (stream.stages() > 1)
      for (auto& a : stream.algos) a->prepare_device(*space);
    else
      algo->prepare_device(*space);
  } else if (peak > double(budget)) {
    const int ranks = static_cast<int>(std::ceil(P * peak / double(budget)));
    std::string alt = algo->name() == "caps" ? ", DFS steps (--caps-steps D...)" : "";
    if (engine->workspace_bytes(1024, 1024, 1024, dt) > 0) alt += ", --engine strassen-lowmem or blas";
    throw UsageError("the run needs about " + format_bytes(peak) + " per rank (" + algo->name() +
                     ", " + engine->name() + ") but " + format_bytes(double(budget)) +
                     " is available per rank: use about " + std::to_string(ranks) + " ranks" + alt +
                     ", smaller sizes or a larger --mem-limit");
  }
  // Host-staged on a GPU: each rank's largest local call must fit in its share of the GPU.
  if (!space && engine->device_free_bytes() > 0) {
    const index_t lm = algo->piece_c().rows(), ln = algo->piece_c().cols(),
                  lk = std::max(algo->piece_a().cols(), algo->piece_b().rows());
    const double per_gpu = double(engine->device_bytes(lm, ln, lk, dt)) * ranks_per_gpu;
    const double need = world.allreduce_max_uncounted(per_gpu);
    if (need > double(engine->device_free_bytes()))
      throw UsageError("the " + engine->name() + " engine needs about " + format_bytes(need) +
                       " per GPU but " + format_bytes(double(engine->device_free_bytes())) +
                       " is free: use more ranks or GPUs, fewer --levels, or --engine gpu-strassen-lowmem");
  }
  if (o.verify == Verify::full && double(verify_full_bytes(o.m, o.n, o.k, dt)) > double(budget))
    throw UsageError("--verify full gathers the matrices on rank 0 and needs " +
                     format_bytes(double(verify_full_bytes(o.m, o.n, o.k, dt))) +
                     ": use --verify freivalds for this size");

  RunReport rec;
  rec.algo = algo->name();
  rec.layout = algo->layout();
  rec.selection = algo->selection();
  rec.engine = algo->uses_engine() ? engine->name() : "scalapack-internal";
  rec.dtype = to_string(dt);
  rec.m = o.m, rec.n = o.n, rec.k = o.k;
  rec.alpha = o.alpha, rec.beta = o.beta;
  rec.ranks = P;
  rec.threads = o.engine_opts.threads;
  rec.repeat = o.repeat;
  rec.warmup = o.warmup;
  rec.seed = o.seed;
  rec.inputs = o.fill == Fill::integer ? "random integers" : "random uniform [-1,1)";
  if (is_complex(dt)) rec.inputs += " (real and imaginary parts)";
  rec.output = o.out_path;
  rec.peak_bytes = peak;
  rec.from_host = space && o.inputs_from_host;
  if (space && space->emulated()) rec.residency = "emulated device (the device path on host memory; between ranks: " + space->transport() + ")";
  else if (space) rec.residency = "device (A, B, C on each rank's GPU; between GPUs: " + space->transport() + ")";
  else if (engine_used && einfo.memory == Memory::device)
    rec.residency = o.host_staged ? "host-staged (--host-staged)"
                                  : "host-staged (" + algo->name() + " has no device-resident multiply yet)";
  rec.words_measured = algo->counts_words();
  CommEstimate est = algo->analytic();
  rec.analytic_words_max = est.words_max;
  rec.analytic_words_mean = est.words_mean;
  rec.analytic_messages_max = est.messages_max;
  rec.stages = stream.stages();
  rec.stage_grid = std::to_string(stream.rows) + "x" + std::to_string(stream.cols);
  if (stream.stages() > 1) {
    // The analytic counts of what runs: every stage's product.
    CommEstimate sum;
    for (int s = 0; s < stream.stages(); ++s) {
      const CommEstimate e = stream.algo(s).analytic();
      sum.words_max += e.words_max, sum.words_mean += e.words_mean, sum.messages_max += e.messages_max;
      sum.flops_max += e.flops_max;
    }
    est.flops_max = sum.flops_max;
    rec.first_stage_split = o.split_first_stage && stream.algo(0).k_prefix().has_value();
    rec.layout = stream.algos[0]->layout() + "; streamed in " + rec.stage_grid +
                 " panels of m x n (host link overlapped with the products" +
                 (rec.first_stage_split ? "; the first stage's product begun on its first k-part" : "") + ")";
    rec.analytic_words_max = sum.words_max, rec.analytic_words_mean = sum.words_mean;
    rec.analytic_messages_max = sum.messages_max;
    rec.notes.push_back("streamed: the analytic max words, messages and flops add each stage's busiest rank (a bound "
                        "of the busiest rank's total; the means add exactly), and the phases every stage's");
    if (!rec.selection.empty())
      rec.selection += "; streamed: each stage's " + rec.algo + " laid out for the stage's own shape (the layout row)";
  } else if (!stream.why_one.empty()) {
    rec.notes.push_back("not streamed (one stage: load, multiply, store in turn): " + stream.why_one);
  }
  LowerBound lb = algo->strassen_like()
                      ? strassen_lower_bound(std::max({o.m, o.n, o.k}), P, peak / size_of(dt))
                      : classical_lower_bound(o.m, o.n, o.k, P, peak / size_of(dt));
  rec.lower_bound_words = lb.words;
  rec.lower_bound = lb.which;

  if (!o.a_path.empty()) rec.inputs = o.a_path + ", " + o.b_path + (o.c_path.empty() ? "" : ", " + o.c_path);
  rec.transa = op_text(o.transa);
  rec.transb = op_text(o.transb);
  rec.flops_max = est.flops_max;
  pr.o = std::move(o);
  pr.dt = dt;
  pr.budget = budget;
  pr.engine = std::move(engine);
  pr.space = std::move(space);
  pr.algo = std::move(algo);
  pr.stream = std::move(stream);
  pr.rec = std::move(rec);
  return pr;
}

}  // namespace

RunReport plan(const Comm& world, RunSpec spec) {
  Prepared pr = prepare(world, std::move(spec));
  RunReport& rec = pr.rec;
  // What the run would measure: the algorithm's exact counts for this layout.
  rec.planned = true;
  rec.words_max = rec.analytic_words_max, rec.words_mean = rec.analytic_words_mean;
  rec.messages_max = rec.analytic_messages_max;
  rec.engine_detail = pr.algo->uses_engine() ? pr.engine->describe() : "ScaLAPACK's own BLAS calls";
  rec.verify = "none (plan: nothing computed)";
  rec.host = host_name();
  rec.time_stamp = iso_time_now();
  return rec;
}

RunReport run(const Comm& world, RunSpec spec) {
  Prepared pr = prepare(world, std::move(spec));
  const RunSpec& o = pr.o;
  const Dtype dt = pr.dt;
  const std::size_t budget = pr.budget;
  Engine* engine = pr.engine.get();
  DistAlgorithm* algo = pr.algo.get();
  RunReport& rec = pr.rec;
  Files& files = pr.files;
  std::unique_ptr<NpyOutput> out;
  if (!o.out_path.empty()) out = std::make_unique<NpyOutput>(o.out_path, world);
  if (o.progress) {
    algo->set_progress(o.progress);
    for (auto& a : pr.stream.algos) a->set_progress(o.progress);
  }
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (pr.space && pr.stream.stages() > 1)
      run_typed_streamed<T>(o, world, pr.stream, *pr.space, *engine, rec, files, out.get(), budget);
    else if (pr.space) run_typed_device<T>(o, world, *algo, *pr.space, *engine, rec, files, out.get(), budget);
    else run_typed<T>(o, world, *algo, *engine, rec, files, out.get(), budget);
  });
  // After the multiply: what the engine chose and ran.
  rec.engine_detail = algo->uses_engine() ? engine->describe()
                                          : "P" + std::string(1, char(std::toupper(info(dt).blas_letter))) +
                                                "GEMM's own BLAS calls (OpenBLAS, " +
                                                std::to_string(o.engine_opts.threads) + " threads)";
  rec.time_min = *std::min_element(rec.times.begin(), rec.times.end());
  rec.time_median = median(rec.times);
  // Real flops: a complex multiply-add is 8 of them.
  rec.gflops = (is_complex(dt) ? 8.0 : 2.0) * double(o.m) * o.n * o.k / rec.time_median / 1e9;
  rec.host = host_name();
  rec.time_stamp = iso_time_now();
  return std::move(rec);
}

nlohmann::json to_json(const RunReport& r) {
  auto scalar = [](std::complex<double> v) {
    return v.imag() == 0 ? nlohmann::json(v.real()) : nlohmann::json::array({v.real(), v.imag()});
  };
  nlohmann::json j;
  j["algo"] = r.algo;
  j["layout"] = r.layout;
  j["selection"] = r.selection;
  j["engine"] = r.engine;
  j["engine_detail"] = r.engine_detail;
  j["dtype"] = r.dtype;
  j["inputs"] = r.inputs;
  j["output"] = r.output;
  j["m"] = r.m;
  j["n"] = r.n;
  j["k"] = r.k;
  j["alpha"] = scalar(r.alpha);
  j["beta"] = scalar(r.beta);
  j["transa"] = r.transa;
  j["transb"] = r.transb;
  j["ranks"] = r.ranks;
  j["threads"] = r.threads;
  j["repeat"] = r.repeat;
  j["warmup"] = r.warmup;
  j["seed"] = r.seed;
  j["times"] = r.times;
  j["time_min"] = r.time_min;
  j["time_median"] = r.time_median;
  j["gflops"] = r.gflops;
  j["planned"] = r.planned;
  j["flops_max"] = r.flops_max;
  j["words_measured"] = r.words_measured;
  j["words_max"] = r.words_max;
  j["words_mean"] = r.words_mean;
  j["messages_max"] = r.messages_max;
  j["messages_mean"] = r.messages_mean;
  j["analytic_words_max"] = r.analytic_words_max;
  j["analytic_words_mean"] = r.analytic_words_mean;
  j["analytic_messages_max"] = r.analytic_messages_max;
  j["lower_bound_words"] = r.lower_bound_words;
  j["lower_bound"] = r.lower_bound;
  j["words_over_bound"] = r.lower_bound_words > 0
                              ? (r.words_measured ? r.words_max : r.analytic_words_max) / r.lower_bound_words
                              : 0.0;
  j["peak_bytes"] = r.peak_bytes;
  j["residency"] = r.residency;
  j["from_host"] = r.from_host;
  j["stages"] = r.stages;
  j["stage_grid"] = r.stage_grid;
  j["exposed_load_seconds"] = r.exposed_load_seconds;
  j["first_stage_split"] = r.first_stage_split;
  j["exposed_store_seconds"] = r.exposed_store_seconds;
  j["load_seconds"] = r.load_seconds;
  j["store_seconds"] = r.store_seconds;
  j["engine_levels_run"] = r.engine_levels_run;
  j["error_growth"] = r.error_growth;
  j["verify"] = r.verify;
  j["residual"] = r.residual;
  j["tolerance"] = r.tolerance;
  j["rel_frobenius"] = r.rel_frobenius;
  j["max_abs"] = r.max_abs;
  j["passed"] = r.passed;
  j["notes"] = r.notes;
  j["phases"] = nlohmann::json::object();
  for (const auto& p : r.phases) j["phases"][p.name] = {{"max", p.max}, {"mean", p.mean}};
  j["host"] = r.host;
  j["time_stamp"] = r.time_stamp;
  return j;
}

}  // namespace distmm
