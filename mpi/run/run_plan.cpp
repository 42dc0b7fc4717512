#include "run_plan.hpp"

#include <omp.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "../../node/blas.hpp"
#include "../../src/core/system.hpp"
#include "run_report.hpp"

namespace distmm {

const char* to_string(Residency r) {
  switch (r) {
    case Residency::host: return "host";
    case Residency::host_staged: return "host-staged";
    case Residency::device: return "device";
    case Residency::streamed: return "streamed";
  }
  return "?";
}

Placement decide_residency(const RunSpec& o, const EngineInfo& engine, const DistAlgorithm* algo, int stages) {
  Placement p;
  p.emulated = o.emulate_device;
  const bool engine_used = o.algo != Algorithm::scalapack;
  const bool gpu_engine = engine_used && engine.memory == Memory::device;
  // A GPU engine keeps the blocks on its GPU for the whole run, unless asked to stage them, or
  // its algorithm has no schedule over a device space.
  const bool wants_device = engine_used && ((gpu_engine && !o.host_staged) || o.emulate_device);
  const bool host_inputs = o.inputs_from_host || !o.a_path.empty();
  if (wants_device && (!algo || algo->runs_on_device())) {
    p.residency = host_inputs && stages > 1 ? Residency::streamed : Residency::device;
  } else if (gpu_engine) {
    p.residency = Residency::host_staged;
    p.why = o.host_staged ? "--host-staged" : algo->name() + " has no device-resident multiply yet";
  }
  return p;
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

// Shapes and dtype from the input files; checks that they fit together (GEMM semantics).
void plan_from_files(RunSpec& o, const Comm& world, InputFiles& f) {
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

// Refuses a dtype or scalars the run cannot take, before anything else is decided.
void check_types(const RunSpec& o, const EngineInfo& einfo, Dtype dt) {
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
  if (o.emulate_device && (!engine_used || einfo.memory == Memory::device || o.host_staged))
    throw UsageError("an emulated device runs a host engine's products (e.g. --engine blas or winograd) through the "
                     "device path; not " + (engine_used ? einfo.name : std::string("scalapack")) +
                     (o.host_staged ? " with --host-staged" : ""));
}

double bytes_of(const Piece& p, Dtype dt) { return double(p.rows()) * double(p.cols()) * size_of(dt); }

// Device bytes per rank (max over ranks) of a device-resident run of `algo`: the blocks of A, B
// and C (and C0), its buffers and the engine's workspace (A or B not apart where it lives in a
// buffer: device_home). Collective.
double device_need(const Comm& world, const DistAlgorithm& algo, const RunSpec& o, Dtype dt, const DeviceSpace& sp) {
  using In = DistAlgorithm::Input;
  return world.allreduce_max_uncounted((algo.device_home(In::a) ? 0.0 : bytes_of(algo.piece_a(), dt)) +
                                       (algo.device_home(In::b) ? 0.0 : bytes_of(algo.piece_b(), dt)) +
                                       bytes_of(algo.piece_c(), dt) * (o.beta != 0.0 ? 2 : 1) +
                                       double(algo.device_extra_bytes(dt, sp)));
}

// The same for a streamed run: B, two stages' A and C, and every stage algorithm's buffers and
// engine workspace. Collective.
double streamed_need(const Comm& world, const StreamPlan& stream, Dtype dt, const DeviceSpace& sp) {
  double a_rows = 0, c_size = 0, extra = 0;
  for (int s = 0; s < stream.stages(); ++s)
    a_rows = std::max(a_rows, double(stream.algo(s).piece_a().rows())),
    c_size = std::max(c_size, double(stream.algo(s).piece_c().rows()) * double(stream.algo(s).piece_c().cols()));
  for (const auto& a : stream.algos) extra += double(a->device_extra_bytes(dt, sp));
  const double panels = (double(stream.b.rows()) * stream.b.cols() + 2 * (a_rows * stream.a.cols() + c_size)) *
                        size_of(dt);
  return world.allreduce_max_uncounted(panels + extra);
}

}  // namespace

RunPlan make_run_plan(const Comm& world, RunSpec o) {
  RunPlan plan;
  plan_from_files(o, world, plan.files);
  validate(o);
  const Dtype dt = o.dtype.value_or(Dtype::f64);
  const EngineInfo& einfo = o.engine ? *o.engine : engine_info("blas");
  check_types(o, einfo, dt);
  const int P = world.size();
  const bool gpu_engine = o.algo != Algorithm::scalapack && einfo.memory == Memory::device;
  const bool host_inputs = o.inputs_from_host || !o.a_path.empty();
  StageGrid grid = auto_stages(o.m, o.n);
  if (o.stage_rows > 0) grid = {o.stage_rows, std::max(o.stage_cols, 1)};
  // Where the run asks to live; the algorithm and the stages' memory confirm it below.
  const Placement asked = decide_residency(o, einfo, nullptr, grid.rows * grid.cols);
  const bool on_device = asked.on_device();

  // Refuse what cannot fit before anything is allocated, on every rank alike.
  const std::size_t budget =
      o.mem_limit ? *o.mem_limit : available_memory_bytes() / std::max(1, node_local_size());
  const double operands = (double(o.m) * o.k + double(o.k) * o.n + double(o.m) * o.n * (o.beta != 0.0 ? 2 : 1)) *
                          size_of(dt) / P;
  const double least = (double(o.m) * o.k + double(o.k) * o.n + double(o.m) * o.n) * size_of(dt) / P;
  if (!on_device && least > double(budget))
    throw UsageError("the operands alone need " + format_bytes(least) + " per rank but " +
                     format_bytes(double(budget)) +
                     " is available per rank: use more ranks, smaller sizes or a larger --mem-limit");

  o.engine_opts.threads = o.threads > 0 ? o.threads : default_threads();
  omp_set_num_threads(o.engine_opts.threads);
  blas_set_threads(o.engine_opts.threads);
  o.engine_opts.device = node_local_rank();  // ranks of a node spread over its GPUs
  std::unique_ptr<Engine> engine = einfo.make(o.engine_opts);
  o.algo_opts.engine = engine.get();
  o.algo_opts.dtype = dt;
  if (o.mem_limit) o.algo_opts.mem_limit = budget;
  // Ranks that share a GPU share its memory (counted by PCI bus: ranks shown only their own GPU
  // see it as device 0). Every device plan keeps a margin for what is allocated outside it
  // (NCCL's buffers, cuBLAS handles): 512 MiB and 5% of the rank's share.
  const double ranks_per_gpu = gpu_engine ? ranks_sharing_gpu(world) : 1;  // collective
  // An emulated device's memory is the rank's host budget less the host's own copies of the
  // operands (inputs from the host, C back), and needs no margin.
  const double emulated_free = std::max(double(budget) - operands, 0.0);
  auto device_share = [&](double free) {
    return o.emulate_device ? free : free / ranks_per_gpu * 0.95 - double(512 << 20);
  };
  if (on_device) {
    o.algo_opts.device_resident = true;
    // The least free memory of any rank, so that every rank plans alike (SUMMA's panel width,
    // CAPS's steps, cuboid's grid depend on it).
    const double free_min =
        -world.allreduce_max_uncounted(-(o.emulate_device ? emulated_free : double(engine->device_free_bytes())));
    const double left = device_share(free_min) - operands;
    o.algo_opts.device_limit = static_cast<std::size_t>(std::max(left, 1.0));
  }
  if (on_device && host_inputs && (o.stage_rows > o.m || o.stage_cols > o.n))
    throw UsageError("--stages " + std::to_string(o.stage_rows) + "x" + std::to_string(o.stage_cols) +
                     " exceeds m x n = " + std::to_string(o.m) + " x " + std::to_string(o.n) +
                     ": use at most m row panels and n column panels (or --stages 1)");
  auto make_space = [&] {
    return o.emulate_device ? make_emulated_device_space(*engine, std::size_t(emulated_free))
                            : make_device_space(*engine, world, int(ranks_per_gpu));  // collective
  };
  // The least device memory free on any rank, less the margin. Collective.
  auto device_free = [&](const DeviceSpace& sp) {
    return device_share(-world.allreduce_max_uncounted(-double(sp.free_bytes())));
  };

  // Host inputs on GPUs: streamed in panels where the stages' layouts agree and their buffers
  // fit, else loaded, multiplied and stored in turn. --algo auto for a streamed run chooses for
  // the product each stage runs, (m / rows) x (n / cols) x k, not for the whole: a square
  // product's stages have k twice their sides at 2 x 2 stages, where cuboid's split of k moves
  // fewer words than SUMMA's gather of A (docs/performance.md).
  Algorithm kind = o.algo;
  std::string stage_choice;
  StreamPlan stream;
  std::unique_ptr<DeviceSpace> space;
  double need = 0;  // device bytes per rank of what will run
  if (asked.residency == Residency::streamed) {
    if (o.algo == Algorithm::automatic) {
      // Classical stages: the stage plan rebuilds the pick by name, and CAPS's by name would not be
      // the steps auto weighed (its dealt steps are for device-resident runs).
      AlgoOptions stage_opts = o.algo_opts;
      stage_opts.strassen_like_ok = false;
      const auto pick = make_algorithm(Algorithm::automatic, world,
                                       {(o.m + grid.rows - 1) / grid.rows, (o.n + grid.cols - 1) / grid.cols, o.k},
                                       stage_opts);
      kind = *parse_algorithm(pick->name());
      stage_choice = "for the stages' products: " + pick->selection();
    }
    stream = make_stream_plan(kind, world, {o.m, o.n, o.k}, o.algo_opts, grid);
    if (stream.stages() > 1 && !stream.algo(0).runs_on_device()) stream = StreamPlan{};
    if (stream.stages() > 1) {
      space = make_space();
      need = streamed_need(world, stream, dt, *space);
      const double free_min = device_free(*space);
      if (need > free_min) {
        stream = StreamPlan{};
        stream.why_one = "the stages' buffers need " + format_bytes(need) + " of GPU memory per rank, " +
                         format_bytes(std::max(free_min, 0.0)) + " free";
      }
    }
    // Not streamed after all: --algo auto chooses for the whole product, as it would without
    // stages (collective; every rank has decided alike).
    if (stream.stages() <= 1) kind = o.algo, stage_choice.clear();
  }
  // The whole product's algorithm gets its inputs where its buffers want them (device_home); a
  // streamed run's stages get theirs in panel buffers.
  AlgoOptions whole_opts = o.algo_opts;
  whole_opts.inputs_at_home = o.algo_opts.device_resident;
  std::unique_ptr<DistAlgorithm> algo = make_algorithm(kind, world, {o.m, o.n, o.k}, whole_opts);
  if (!stage_choice.empty())
    algo->set_selection(algo->selection().empty() ? stage_choice : algo->selection() + "; " + stage_choice);
  const Placement placement = decide_residency(o, einfo, algo.get(), stream.stages());
  if (!placement.on_device()) space.reset();
  else if (!space) space = make_space();

  double peak = double(algo->peak_bytes(dt, *engine));
  if (o.beta != 0.0) peak += bytes_of(algo->piece_c(), dt);
  peak = world.allreduce_max_uncounted(peak);
  if (space) {
    // GPU memory, planned per rank before anything is allocated.
    if (placement.residency != Residency::streamed) need = device_need(world, *algo, o, dt, *space);
    const double free_min = device_free(*space);
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
  } else if (peak > double(budget)) {
    const int ranks = static_cast<int>(std::ceil(P * peak / double(budget)));
    std::string alt = algo->name() == "caps" ? ", DFS steps (--caps-steps D...)" : "";
    if (engine->workspace_bytes(1024, 1024, 1024, dt) > 0) alt += ", --engine strassen-lowmem or blas";
    throw UsageError("the run needs about " + format_bytes(peak) + " per rank (" + algo->name() +
                     ", " + engine->name() + ") but " + format_bytes(double(budget)) +
                     " is available per rank: use about " + std::to_string(ranks) + " ranks" + alt +
                     ", smaller sizes or a larger --mem-limit");
  }
  // The engine as the rank's largest local product finds it.
  const index_t lm = algo->piece_c().rows(), ln = algo->piece_c().cols(),
                lk = std::max(algo->piece_a().cols(), algo->piece_b().rows());
  const EngineCapabilities caps = engine->capabilities_for(lm, ln, lk, dt);
  // Host-staged on a GPU: each rank's largest local call must fit in its share of the GPU.
  if (!space && caps.device_free_bytes > 0) {
    const double need_per_gpu = world.allreduce_max_uncounted(double(caps.device_bytes) * ranks_per_gpu);
    if (need_per_gpu > double(caps.device_free_bytes))
      throw UsageError("the " + engine->name() + " engine needs about " + format_bytes(need_per_gpu) +
                       " per GPU but " + format_bytes(double(caps.device_free_bytes)) +
                       " is free: use more ranks or GPUs, fewer --levels, or --engine gpu-strassen-lowmem");
  }
  if (o.verify == Verify::full && double(verify_full_bytes(o.m, o.n, o.k, dt)) > double(budget))
    throw UsageError("--verify full gathers the matrices on rank 0 and needs " +
                     format_bytes(double(verify_full_bytes(o.m, o.n, o.k, dt))) +
                     ": use --verify freivalds for this size");

  plan.spec = std::move(o);
  plan.dt = dt;
  plan.budget = budget;
  plan.placement = placement;
  plan.engine = std::move(engine);
  plan.engine_caps = caps;
  plan.space = std::move(space);
  plan.algo = std::move(algo);
  plan.stream = std::move(stream);
  plan.peak_bytes = peak;
  plan.report = planned_report(plan, world);
  return plan;
}

}  // namespace distmm
