// The run's execution: run() executes the plan (run_plan.cpp) in the residency it names --
// host memory, host-staged, device-resident or streamed through the device -- with one helper
// for the timed repetitions; the report's figures come from run_report.cpp.
#include "run.hpp"

#include <limits>
#include <optional>

#include "../../src/core/system.hpp"
#include "../../src/core/timer.hpp"
#include "../runtime/distribution.hpp"
#include "run_plan.hpp"
#include "run_report.hpp"

namespace distmm {

int default_threads() { return std::max(1, hardware_threads() / std::max(1, node_local_size())); }

const char* to_string(Verify v) {
  return v == Verify::none ? "none" : v == Verify::freivalds ? "freivalds" : "full";
}

namespace {

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


// The inputs in host memory, in the algorithm's layout: read from the files or generated (C0
// only with beta != 0).
template <class T>
struct HostInputs {
  DistMatrix<T> A, B, C0;
};
template <class T>
HostInputs<T> host_inputs(const RunSpec& o, const Comm& world, const Piece& pa, const Piece& pb, const Piece& pc,
                          const InputFiles& files) {
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
HostInputs<T> host_inputs(const RunSpec& o, const Comm& world, const DistAlgorithm& algo, const InputFiles& files) {
  return host_inputs<T>(o, world, algo.piece_a(), algo.piece_b(), algo.piece_c(), files);
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


// The warm-up and timed repetitions, alike for every residency. ready(rep) sets a repetition up
// (C from C0, the caller's hooks); then every rank starts the multiply together, and it is
// timed until its work is done on every lane of `sp` (where there is one): max over ranks.
// rep < 0 is a warm-up; after a timed one, recorded() takes what the lanes measured. Returns
// the last repetition's measured communication.
template <class Ready, class Multiply, class Recorded>
CommCounters timed_repetitions(const RunSpec& o, const Comm& world, DeviceSpace* sp, RunReport& rec, Ready&& ready,
                               Multiply&& multiply, Recorded&& recorded) {
  CommCounters counted;
  for (int rep = -o.warmup; rep < o.repeat; ++rep) {
    ready(rep);
    comm_counters() = CommCounters{};
    if (o.repetition_started) o.repetition_started();
    if (sp) sp->synchronize();
    world.barrier();
    const double t0 = MPI_Wtime();
    multiply(rep);
    if (sp) sp->synchronize();
    const double t = world.allreduce_max_uncounted(MPI_Wtime() - t0);
    counted = comm_counters();
    if (rep >= 0) rec.times.push_back(t), recorded();
  }
  return counted;
}

// The host run (host memory; a GPU engine stages each local product).
template <class T>
void run_typed(const RunPlan& p, const Comm& world, RunReport& rec, NpyOutput* out) {
  const RunSpec& o = p.spec;
  DistAlgorithm& algo = *p.algo;
  const bool keep_c0 = o.beta != 0.0;

  auto [A, B, C0] = host_inputs<T>(o, world, algo, p.files);
  DistMatrix<T> C(o.m, o.n, algo.piece_c());

  const Verify verify = check_inputs(o, world, A, B, keep_c0 ? &C0 : nullptr, rec, p.budget);

  const T alpha = scalar<T>(o.alpha), beta = scalar<T>(o.beta);
  const CommCounters counted = timed_repetitions(
      o, world, nullptr, rec,
      [&](int) {
        if (keep_c0) std::copy(C0.local.data(), C0.local.data() + C0.local.size(), C.local.data());
      },
      [&](int) { algo.multiply(*p.engine, alpha, A.local, B.local, beta, C.local); }, [] {});

  collect_measurements(world, algo, counted, rec);
  const double growth = error_growth(world, algo, *p.engine, rec);
  verify_and_write(o, world, verify, A, B, C, keep_c0 ? &C0 : nullptr, alpha, beta, growth, rec, out);
}

// The device-resident run (DeviceSpace): A, B and C (and C0) live in the rank's GPU memory for
// the whole run. Random inputs are generated there (the host generator's values, by global
// index); files are read once on the host and copied once; C comes back only for --out or a
// full verification. The timed multiply is the algorithm's device multiply with data resident,
// as `distmm gpu-bench` times a product; loading and storing are timed apart.
template <class T>
void run_typed_device(const RunPlan& p, const Comm& world, RunReport& rec, NpyOutput* out) {
  const RunSpec& o = p.spec;
  DistAlgorithm& algo = *p.algo;
  DeviceSpace& sp = *p.space;
  const std::size_t budget = p.budget;
  const bool keep_c0 = o.beta != 0.0;
  Verify verify = o.verify;
  // Every device allocation of the run before any transfer: a rank that cannot allocate says so
  // and all leave together (none is left waiting in a collective).
  DeviceDistMatrix A, B, C, C0;
  std::string failed;
  try {
    algo.reserve_device(sp, dtype_of<T>());
    // A and B where the algorithm gathers them (SUMMA's whole-k), else in blocks of their own.
    auto input = [&](DistAlgorithm::Input which, index_t rows, index_t cols, const Piece& piece) {
      if (void* home = algo.device_home_address(which, dtype_of<T>()))
        return DeviceDistMatrix(rows, cols, piece, home, algo.device_home(which)->ld);
      return DeviceDistMatrix(sp, rows, cols, piece, sizeof(T));
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
    auto [ha, hb, hc0] = host_inputs<T>(o, world, algo, p.files);
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
  CommCounters counted = timed_repetitions(
      o, world, &sp, rec,
      [&](int) {
        if (keep_c0) sp.copy(C.data<T>(), C.ld, C0.data<T>(), C0.ld, pc.rows(), pc.cols(), DeviceSpace::Lane::compute);
        if (o.device_repetition_started) o.device_repetition_started(sp, call);
      },
      [&](int) { algo.multiply_device(sp, call); }, [] {});
  collect_measurements(world, algo, counted, rec);
  const double growth = error_growth(world, algo, *p.engine, rec);

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
void run_typed_streamed(const RunPlan& p, const Comm& world, RunReport& rec, NpyOutput* out) {
  const RunSpec& o = p.spec;
  const StreamPlan& plan = p.stream;
  DeviceSpace& sp = *p.space;
  const std::size_t budget = p.budget;
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

  auto [ha, hb, hc0] = host_inputs<T>(o, world, plan.a, plan.b, plan.c, p.files);
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
  std::vector<double> exposed_load, exposed_store;
  std::vector<double> phases(plan.algo(0).phase_names().size(), 0.0);
  const CommCounters counted = timed_repetitions(
      o, world, &sp, rec, [](int) {},
      [&](int rep) {
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
      },
      [&] {
        // the last C's copy waited for both lanes' last work
        exposed_load.push_back(sp.seconds_between(started, first_in));
        exposed_store.push_back(std::min(sp.seconds_between(done_compute, ended), sp.seconds_between(done_comm, ended)));
      });
  rec.exposed_load_seconds = world.allreduce_max_uncounted(median(exposed_load));
  rec.exposed_store_seconds = world.allreduce_max_uncounted(median(exposed_store));
  pins.clear();
  collect_measurements(world, plan.algo(0).phase_names(), phases, counted, rec);
  const double growth = error_growth(world, plan.algo(0), *p.engine, rec);
  verify_and_write(o, world, verify, ha, hb, hC, keep_c0 ? &hc0 : nullptr, alpha, beta, growth, rec, out);
}

}  // namespace

RunReport plan(const Comm& world, RunSpec spec) {
  RunPlan p = make_run_plan(world, std::move(spec));
  RunReport rec = std::move(p.report);
  record_planned(p, rec);
  return rec;
}

RunReport run(const Comm& world, RunSpec spec) {
  RunPlan p = make_run_plan(world, std::move(spec));
  const RunSpec& o = p.spec;
  RunReport rec = std::move(p.report);
  std::unique_ptr<NpyOutput> out;
  if (!o.out_path.empty()) out = std::make_unique<NpyOutput>(o.out_path, world);
  if (o.progress) {
    p.algo->set_progress(o.progress);
    for (auto& a : p.stream.algos) a->set_progress(o.progress);
  }
  // The communicators (collective) of what will run: the stages' algorithms when streaming,
  // else the algorithm (NCCL's take a while each, and hold GPU memory).
  if (p.placement.residency == Residency::streamed)
    for (auto& a : p.stream.algos) a->prepare_device(*p.space);
  else if (p.placement.on_device())
    p.algo->prepare_device(*p.space);
  dispatch(p.dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    switch (p.placement.residency) {
      case Residency::streamed: run_typed_streamed<T>(p, world, rec, out.get()); break;
      case Residency::device: run_typed_device<T>(p, world, rec, out.get()); break;
      case Residency::host:
      case Residency::host_staged: run_typed<T>(p, world, rec, out.get()); break;
    }
  });
  record_run(p, rec);
  return rec;
}

}  // namespace distmm
