// The plan of a multiply on the callers' layouts, and its execution (multiply.hpp).
#include "multiply.hpp"

#include <array>
#include <numeric>
#include <stdexcept>

#include "../../cuda/device_info.hpp"
#include "../../cuda/ozaki_accuracy.hpp"
#include "../../src/core/system.hpp"
#include "../algorithms/block_cyclic_direct.hpp"
#include "../runtime/device_space.hpp"
#include "../runtime/distribution.hpp"
#include "../runtime/redistribute.hpp"

namespace distmm {

struct MultiplyPlan::Impl {
  Comm comm;       // the caller's ranks (a duplicate: the plan's traffic stays apart)
  Comm algo_comm;  // the same ranks renumbered for the algorithm (when relabeled)
  Dtype dtype = Dtype::f64;
  GemmShape shape;
  bool conj_a = false, conj_b = false;
  std::unique_ptr<Engine> own_engine;
  Engine* engine = nullptr;
  bool device = false;  // the plan runs in a device space (A, B or C in device memory)
  // A, B, C in host memory in a device plan (mixed memories): copied through stage[i], a device
  // buffer laid out as this rank's storage of it (its tiles, at the same offsets).
  std::array<bool, 3> staged{};
  std::array<RankTiles, 3> tiles;  // this rank's tiles of A, B, C as stored (op(A), op(B))
  // Where the redistribution runs (and, on a device, the algorithm): the engine's host space,
  // its GPU's space or the emulated device; declared before what lives in it.
  std::unique_ptr<DeviceSpace> space;
  std::unique_ptr<DeviceComm> dcomm;  // over comm
  Redistribution::Scratch scratch;
  DeviceBlock abuf, bbuf, cbuf;  // the operands not used in place (kept between executes)
  std::array<DeviceBlock, 3> stage;  // the staged matrices' device copies
  std::unique_ptr<DistAlgorithm> algo;  // null where m, n or k is 0
  bool algo_in_space = false;  // the algorithm multiplies in `space` (its buffers reserved there)
  Piece pa, pb, pc;
  ResolvedLayout lc;  // C as the caller holds it (k = 0 scales it)
  Redistribution ra, rb, rc;
  std::optional<InPlace> ip_a, ip_b, ip_c;
  std::vector<int> ranks;
  index_t held = 0, held_identity = 0;
  MovedWords moved, moved_max, moved_total;
  std::size_t memory = 0;
  // Block-cyclic A, B and C multiplied on their own layout (block_cyclic_direct.hpp): the grid's
  // communicators (ranks in row-major grid order, its rows, its columns), made once here, the
  // schedule, and the local arrays' leading dimensions.
  Comm grid, grid_row, grid_col;
  BlockCyclicDirect direct;
  std::array<index_t, 3> direct_ld{1, 1, 1};

  bool plan_direct(Op op_a, const Layout& la, Op op_b, const Layout& lb, const Layout& lc, std::size_t mem_limit,
                   index_t panel);
  std::size_t staged_bytes() const;
  void reserve_buffers();
  void stage_in(const void*& A, const void*& B, void*& C, const void* beta);
  void stage_out(void* C);
  ExecuteSeconds seconds;  // the last execute's parts, this rank's
};

namespace {

std::string dims(index_t r, index_t c) { return std::to_string(r) + " x " + std::to_string(c); }

// Where each of A, B and C is (collective): the same for each matrix on every rank, else
// MemoryUnsupported with the same message on every rank.
std::array<Memory, 3> memories_of(const Layout& la, const Layout& lb, const Layout& lc, const Comm& comm) {
  int v[6];
  const Layout* ls[3] = {&la, &lb, &lc};
  for (int i = 0; i < 3; ++i) v[i] = ls[i]->memory() == Memory::device, v[3 + i] = -v[i];
  MPI_Allreduce(MPI_IN_PLACE, v, 6, MPI_INT, MPI_MIN, comm.get());
  for (int i = 0; i < 3; ++i)
    if (v[i] != -v[3 + i])
      throw MemoryUnsupported(std::string("distmm::multiply: ") + "ABC"[i] +
                              " is in GPU memory on some ranks and in host memory on others: describe it alike on "
                              "every rank (Layout::with_memory)");
  return {v[0] ? Memory::device : Memory::host, v[1] ? Memory::device : Memory::host,
          v[2] ? Memory::device : Memory::host};
}

// "A", "A and C", "A, B and C": the matrices where pick[i].
std::string names(const std::array<bool, 3>& pick) {
  std::vector<std::string> n;
  for (int i = 0; i < 3; ++i)
    if (pick[std::size_t(i)]) n.emplace_back(1, "ABC"[i]);
  std::string s;
  for (std::size_t i = 0; i < n.size(); ++i) s += (i == 0 ? "" : i + 1 == n.size() ? " and " : ", ") + n[i];
  return s;
}

// f(offset, ld, rows, cols) for each tile's storage as a column-major block (a row-major tile's
// transpose): what a staged matrix copies, its elements and nothing between them.
template <class F>
void for_each_storage(const RankTiles& tiles, F&& f) {
  for (const Tile& t : tiles) {
    const bool col = t.order == StorageOrder::col_major;
    const index_t r = Tile::total(col ? t.rows : t.cols), n = Tile::total(col ? t.cols : t.rows);
    if (r > 0 && n > 0) f(t.offset, t.ld, r, n);
  }
}

MovedWords reduce(const MovedWords& w, const Comm& comm, MPI_Op op) {
  index_t v[3] = {w.a, w.b, w.c};
  MPI_Allreduce(MPI_IN_PLACE, v, 3, MPI_INT64_T, op, comm.get());
  return {v[0], v[1], v[2]};
}

}  // namespace

MultiplyPlan::MultiplyPlan(const Comm& comm, Dtype dt, Op op_a, const Layout& la, Op op_b, const Layout& lb,
                           const Layout& lc, const MultiplyOptions& options)
    : impl_(std::make_unique<Impl>()) {
  Impl& x = *impl_;
  x.comm = comm.dup();
  x.dtype = dt;
  const int P = x.comm.size(), me = x.comm.rank();
  const bool complex = dispatch(dt, [](auto tag) { return is_complex_v<typename decltype(tag)::type>; });
  x.conj_a = op_a == Op::C && complex, x.conj_b = op_b == Op::C && complex;

  // The layouts, checked together: every rank throws the same first problem.
  ResolvedLayout ra = resolve(la, x.comm, "A"), rb = resolve(lb, x.comm, "B");
  x.lc = resolve(lc, x.comm, "C");
  std::string error = !ra.error.empty() ? ra.error : !rb.error.empty() ? rb.error : x.lc.error;
  if (error.empty()) {
    if (op_a != Op::N) ra = transposed(ra);
    if (op_b != Op::N) rb = transposed(rb);
    const index_t m = x.lc.rows, n = x.lc.cols, k = ra.cols;
    auto op = [](Op o) { return o == Op::N ? "" : o == Op::T ? "^T" : "^H"; };
    if (ra.rows != m)
      error = "A" + std::string(op(op_a)) + " is " + dims(ra.rows, ra.cols) + " but C is " + dims(m, n) +
              ": op(A) must have C's " + std::to_string(m) + " rows (check the op and A's layout's sizes)";
    else if (rb.rows != k || rb.cols != n)
      error = "B" + std::string(op(op_b)) + " is " + dims(rb.rows, rb.cols) + " but must be k x n = " + dims(k, n) +
              " (k from op(A) " + dims(m, k) + ", n from C): check the op and B's layout's sizes";
    x.shape = {m, n, k};
  }
  error = x.comm.first_error(error);
  if (!error.empty()) throw std::invalid_argument("distmm::multiply: " + error);

  const std::array<Memory, 3> mem = memories_of(la, lb, lc, x.comm);
  std::array<bool, 3> on_device{};
  for (std::size_t i = 0; i < 3; ++i) on_device[i] = mem[i] == Memory::device;
  x.device = on_device[0] || on_device[1] || on_device[2];
  for (std::size_t i = 0; i < 3; ++i) x.staged[i] = x.device && !on_device[i];
  const std::string dev = names(on_device), is = on_device[0] + on_device[1] + on_device[2] > 1 ? " are" : " is";
  const bool emulated = x.device && options.emulate_device;
  std::string engine_name = options.engine;
  if (engine_name.empty()) engine_name = x.device && !emulated && gpu_support_built() ? "cublas" : "blas";
  EngineOptions eo = options.engine_options;
  ozaki::Accuracy target;  // (read by the INT8-emulated engines; checked for every engine)
  if (const std::string why = ozaki::parse_accuracy(eo.accuracy, target, "engine_options.accuracy "); !why.empty())
    throw UsageError(why);
  if (x.device && !emulated && current_gpu() >= 0) eo.device = current_gpu();  // where the caller's buffers are
  x.engine = options.engine_ptr;
  if (!x.engine) x.own_engine = make_engine(engine_name, eo), x.engine = x.own_engine.get();
  const bool gpu_engine = x.engine->capabilities().memory == Memory::device;
  if (x.device) {
    std::string why;
    if (emulated && gpu_engine)
      why = "emulate_device takes host memory as the device's and a host engine's products: engine " +
            x.engine->name() + " is a GPU engine; choose a host engine (e.g. blas)";
    else if (!emulated && !gpu_support_built())
      why = dev + is + " in GPU memory but this build of distmm has no CUDA: rebuild with -DDISTMM_CUDA=ON, or "
            "copy " + (is == " is" ? "it" : "them") + " to the host and describe the host copies";
    else if (!emulated && !gpu_engine)
      why = dev + is + " in GPU memory but engine " + x.engine->name() +
            " computes on the host: name a GPU engine (e.g. cublas), or describe host copies";
    why = x.comm.first_error(why);
    if (!why.empty()) throw MemoryUnsupported("distmm::multiply: " + why);
  }
  // The space of the redistribution (and, for device memory, of the algorithm); collective.
  if (!x.device) x.space = make_host_space(*x.engine);
  else if (emulated) {
    const std::size_t share = available_memory_bytes() / std::size_t(std::max(1, node_local_size(x.comm)));
    const std::size_t budget = options.emulated_device_bytes;
    x.space = make_emulated_device_space(*x.engine, budget ? budget : share, budget > 0);
  }
  else x.space = make_device_space(*x.engine, x.comm, ranks_sharing_gpu(x.comm));
  if (!x.space) throw MemoryUnsupported("distmm::multiply: no device space for engine " + x.engine->name());
  x.dcomm = x.space->comm(x.comm);
  x.ranks.resize(static_cast<std::size_t>(P));
  std::iota(x.ranks.begin(), x.ranks.end(), 0);
  x.tiles = {ra.ranks[std::size_t(me)], rb.ranks[std::size_t(me)], x.lc.ranks[std::size_t(me)]};
  const GemmShape s = x.shape;
  if (s.m == 0 || s.n == 0 || s.k == 0) {  // nothing to multiply (k = 0: C = beta C)
    x.staged[0] = x.staged[1] = false;     // A and B are not read
    x.reserve_buffers();
    x.memory = static_cast<std::size_t>(x.comm.allreduce_max_uncounted(double(x.staged_bytes())));
    return;
  }

  AlgoOptions o = options.algo;
  o.dtype = dt;
  o.engine = x.engine;
  // One memory limit for both builds below, so that they plan alike (the limit is collective).
  if (o.mem_limit == 0) o.mem_limit = static_cast<std::size_t>(plan_memory_limit(x.comm, s, o));
  // Block-cyclic layouts that line up: the drop-in's schedules on them, nothing redistributed.
  if (!x.device && options.direct && options.algorithm == Algorithm::automatic &&
      x.plan_direct(op_a, la, op_b, lb, lc, o.mem_limit, o.panel)) {
    const index_t all = s.m * s.k + s.k * s.n + s.m * s.n;
    x.held = x.held_identity = all;
    x.ip_a = InPlace{0, x.direct_ld[0]}, x.ip_b = InPlace{0, x.direct_ld[1]}, x.ip_c = InPlace{0, x.direct_ld[2]};
    x.memory = static_cast<std::size_t>(x.comm.allreduce_max_uncounted(x.direct.buffer_bytes(size_of(dt))));
    x.reserve_buffers();  // none (host memory, nothing staged or redistributed): the same agreement
    return;
  }
  if (x.device) {
    // Sized for the device, as a device-resident run is (run_plan.cpp): the least free memory
    // of any rank, less a margin on a GPU, the operands and their redistributed copies.
    o.device_resident = true;
    const double free_min = -x.comm.allreduce_max_uncounted(-double(x.space->free_bytes()));
    const double operands = 2.0 * double(s.m * s.k + s.k * s.n + s.m * s.n) * double(size_of(dt)) / P;
    const double share = emulated ? free_min : free_min * 0.95 - double(512 << 20);
    o.device_limit = static_cast<std::size_t>(std::max(share - operands, 1.0));
  }
  std::unique_ptr<DistAlgorithm> first = make_algorithm(options.algorithm, x.comm, s, o);
  if (x.device && !first->runs_on_device())
    throw UsageError("distmm::multiply: " + first->name() +
                     " has no schedule over a device space: name another algorithm for device memory (or auto)");

  // COSTA's relabeling: held[p][r] = what rank p holds of the algorithm rank r's parts.
  auto want = [&](const DistAlgorithm& a) {
    return std::array<ResolvedLayout, 3>{from_pieces(s.m, s.k, allgather_pieces(a.piece_a(), x.comm)),
                                         from_pieces(s.k, s.n, allgather_pieces(a.piece_b(), x.comm)),
                                         from_pieces(s.m, s.n, allgather_pieces(a.piece_c(), x.comm))};
  };
  std::array<ResolvedLayout, 3> w = want(*first);
  {
    auto held = held_matrix(ra, w[0], x.comm);
    const auto hb = held_matrix(rb, w[1], x.comm), hc = held_matrix(x.lc, w[2], x.comm);
    for (int p = 0; p < P; ++p)
      for (int r = 0; r < P; ++r) held[std::size_t(p)][std::size_t(r)] += hb[std::size_t(p)][std::size_t(r)] + hc[std::size_t(p)][std::size_t(r)];
    for (int p = 0; p < P; ++p) x.held_identity += held[std::size_t(p)][std::size_t(p)];
    const std::vector<int> perm = options.relabel ? best_assignment(held) : x.ranks;
    if (perm != x.ranks) {
      int mine = 0;
      for (int r = 0; r < P; ++r)
        if (perm[std::size_t(r)] == me) mine = r;
      x.algo_comm = x.comm.split(0, mine);
      Algorithm kind = options.algorithm;
      if (kind == Algorithm::automatic)
        if (auto named = parse_algorithm(first->name())) kind = *named;
      x.algo = make_algorithm(kind, x.algo_comm, s, o);
      x.algo->set_selection(first->selection());
      x.ranks = perm;
      w = want(*x.algo);
    }
  }
  if (!x.algo) x.algo = std::move(first);
  first.reset();
  x.pa = x.algo->piece_a(), x.pb = x.algo->piece_b(), x.pc = x.algo->piece_c();

  // What is already where the algorithm wants it (the pieces as built, relabeled).
  const auto mine = [&](std::size_t r) { return std::array<const RankTiles*, 3>{&ra.ranks[r], &rb.ranks[r], &x.lc.ranks[r]}; };
  index_t held = 0;
  for (std::size_t i = 0; i < 3; ++i) held += overlap_elements(*mine(std::size_t(me))[i], w[i].ranks[std::size_t(me)]);
  MPI_Allreduce(MPI_IN_PLACE, &held, 1, MPI_INT64_T, MPI_SUM, x.comm.get());
  x.held = held;

  // Used in place where the caller's storage is the piece's, column-major (a conjugate needs a copy).
  if (!x.conj_a) x.ip_a = in_place(ra.ranks[std::size_t(me)], piece_tile(x.pa));
  if (!x.conj_b) x.ip_b = in_place(rb.ranks[std::size_t(me)], piece_tile(x.pb));
  x.ip_c = in_place(x.lc.ranks[std::size_t(me)], piece_tile(x.pc));
  int all_c = x.ip_c.has_value();  // C in place on every rank or on none (one beta for the algorithm)
  MPI_Allreduce(MPI_IN_PLACE, &all_c, 1, MPI_INT, MPI_MIN, x.comm.get());
  if (!all_c) x.ip_c.reset();

  x.ra = Redistribution(ra, w[0], x.comm);
  x.rb = Redistribution(rb, w[1], x.comm);
  x.rc = Redistribution(w[2], x.lc, x.comm);
  x.moved = {x.ra.sent(), x.rb.sent(), x.rc.sent()};
  x.moved_max = reduce(x.moved, x.comm, MPI_MAX);
  x.moved_total = reduce(x.moved, x.comm, MPI_SUM);

  const std::size_t elem = size_of(dt);
  double bytes = double(x.algo->peak_bytes(dt, *x.engine));
  if (!x.ip_a) bytes += double(x.pa.rows() * x.pa.cols()) * elem;
  if (!x.ip_b) bytes += double(x.pb.rows() * x.pb.cols()) * elem;
  if (!x.ip_c) bytes += double(x.pc.rows() * x.pc.cols()) * elem;
  bytes += double(std::max({x.ra.sent() + x.ra.received(), x.rb.sent() + x.rb.received(),
                            x.rc.sent() + x.rc.received()})) * elem;
  bytes += double(x.staged_bytes());
  x.memory = static_cast<std::size_t>(x.comm.allreduce_max_uncounted(bytes));

  // The algorithm in the plan's space (host memory too, where it has a schedule over a space:
  // the same schedule multiply_call runs), so that its buffers are reserved with the plan's.
  x.algo_in_space = x.algo->runs_on_device();
  if (x.algo_in_space) x.algo->prepare_device(*x.space);  // its communicators (collective)
  x.reserve_buffers();
}

// The block-cyclic schedule for A, B and C where all three are block-cyclic on one grid of every
// rank (collective; every rank decides alike: the layouts' grids and blockings are agreed by
// resolve(), the memory limit is the plan's). The grid's communicators are made only then.
bool MultiplyPlan::Impl::plan_direct(Op op_a, const Layout& la, Op op_b, const Layout& lb, const Layout& lc,
                                     std::size_t mem_limit, index_t panel) {
  using block_cyclic::CyclicDim;
  using block_cyclic::LogicalDim;
  const auto ga = la.block_cyclic_grid(), gb = lb.block_cyclic_grid(), gc = lc.block_cyclic_grid();
  if (op_a != Op::N || op_b != Op::N || !ga || !gb || !gc) return false;
  const int pr = gc->nprow, pc = gc->npcol, me = comm.rank();
  for (const Layout::BlockCyclic* x : {&*ga, &*gb})
    if (x->nprow != pr || x->npcol != pc || x->order != gc->order) return false;
  if (pr * pc != comm.size()) return false;  // ranks beyond the grid: the algorithms' layouts
  const bool rm = gc->order == GridOrder::row_major;
  const block_cyclic::Grid g{pr, pc, rm ? me / pc : me % pr, rm ? me % pc : me / pr};
  grid = comm.split(0, g.myrow * pc + g.mycol);
  grid_row = grid.split(g.myrow, g.mycol);
  grid_col = grid.split(g.mycol, g.myrow);
  auto dim = [](index_t b, int src, int np, bool rows) { return LogicalDim{CyclicDim{b, b, src, np}, 0, rows}; };
  const LogicalDim ar = dim(ga->mb, ga->rsrc, pr, true), ac = dim(ga->nb, ga->csrc, pc, false),
                   br = dim(gb->mb, gb->rsrc, pr, true), bc = dim(gb->nb, gb->csrc, pc, false),
                   cr = dim(gc->mb, gc->rsrc, pr, true), cc = dim(gc->nb, gc->csrc, pc, false);
  direct = plan_block_cyclic_direct({&grid, &grid_row, &grid_col, g}, op_a, op_b, ar, ac, br, bc, cr, cc, shape.m,
                                    shape.n, shape.k, size_of(dtype),
                                    {BlockCyclicDirectOptions::Mode::automatic, panel, mem_limit});
  if (!direct) {
    grid = Comm(), grid_row = Comm(), grid_col = Comm();
    return false;
  }
  // The local arrays' leading dimensions, as resolve() took them (lld 0: the local row count).
  const index_t local_rows[3] = {block_cyclic::local_span(ar, shape.m, g.myrow).count,
                                 block_cyclic::local_span(br, shape.k, g.myrow).count, direct.r.count};
  const index_t lld[3] = {ga->lld, gb->lld, gc->lld};
  for (std::size_t i = 0; i < 3; ++i) direct_ld[i] = lld[i] > 0 ? lld[i] : std::max<index_t>(1, local_rows[i]);
  return true;
}

std::size_t MultiplyPlan::Impl::staged_bytes() const {
  std::size_t b = 0;
  for (std::size_t i = 0; i < 3; ++i)
    if (staged[i]) b += std::size_t(local_extent(tiles[i])) * size_of(dtype);
  return b;
}

// Every buffer execute() uses, allocated now (collective): a rank that cannot allocate one says
// so and every rank throws the same UsageError, so execute() allocates nothing (no rank fails
// alone there while the others wait in the redistribution's collectives). A plan has one dtype.
void MultiplyPlan::Impl::reserve_buffers() {
  std::string failed;
  try {
    const std::size_t e = size_of(dtype);
    auto block = [&](DeviceBlock& b, std::size_t bytes) { reserve(*space, b, bytes); };
    for (std::size_t i = 0; i < 3; ++i)
      if (staged[i]) block(stage[i], std::size_t(local_extent(tiles[i])) * e);
    if (algo) {
      if (!ip_a) block(abuf, std::size_t(pa.rows() * pa.cols()) * e);
      if (!ip_b) block(bbuf, std::size_t(pb.rows() * pb.cols()) * e);
      if (!ip_c) block(cbuf, std::size_t(pc.rows() * pc.cols()) * e);
      // One scratch for the three redistributions, as large as the largest needs.
      block(scratch.send, std::size_t(std::max({ra.sent(), rb.sent(), rc.sent()})) * e);
      block(scratch.recv, std::size_t(std::max({ra.received(), rb.received(), rc.received()})) * e);
      if (algo_in_space) algo->reserve_device(*space, dtype);
    }
    // What the staged matrices' copies will allocate (a GPU's pinned chunks), taken now.
    for (std::size_t i = 0; i < 3; ++i)
      if (staged[i])
        for_each_storage(tiles[i], [&](index_t, index_t, index_t r, index_t n) { space->reserve_transfers(r, n, e); });
  } catch (const std::exception& ex) {
    failed = "rank " + std::to_string(comm.rank()) + " cannot allocate the plan's buffers: " + ex.what();
  }
  failed = comm.first_error(failed);
  if (!failed.empty()) throw UsageError("distmm::multiply: " + failed);
}

// The staged matrices' tiles into their device copies (C only where beta != 0: beta = 0 never
// reads it), and the copies' pointers in place of the caller's.
void MultiplyPlan::Impl::stage_in(const void*& A, const void*& B, void*& C, const void* beta) {
  const std::size_t e = size_of(dtype);
  const bool read_c = dispatch(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return *static_cast<const T*>(beta) != T(0);
  });
  const void* from[3] = {A, B, C};
  for (std::size_t i = 0; i < 3; ++i) {
    if (!staged[i]) continue;
    char* to = stage[i].as<char>();
    if (i < 2 || read_c)
      for_each_storage(tiles[i], [&](index_t off, index_t ld, index_t r, index_t n) {
        const std::size_t at = std::size_t(off) * e;
        space->upload(to + at, ld, static_cast<const char*>(from[i]) + at, ld, r, n, e);
      });
  }
  if (staged[0]) A = stage[0].as<void>();
  if (staged[1]) B = stage[1].as<void>();
  if (staged[2]) C = stage[2].as<void>();
}

// C's tiles back from its device copy into the caller's host memory (when staged).
void MultiplyPlan::Impl::stage_out(void* C) {
  if (!staged[2]) return;
  const std::size_t e = size_of(dtype);
  for_each_storage(tiles[2], [&](index_t off, index_t ld, index_t r, index_t n) {
    const std::size_t at = std::size_t(off) * e;
    space->download(static_cast<char*>(C) + at, ld, stage[2].as<char>() + at, ld, r, n, e);
  });
}

MultiplyPlan::~MultiplyPlan() = default;
MultiplyPlan::MultiplyPlan(MultiplyPlan&&) noexcept = default;
MultiplyPlan& MultiplyPlan::operator=(MultiplyPlan&&) noexcept = default;

GemmShape MultiplyPlan::shape() const { return impl_->shape; }
Dtype MultiplyPlan::dtype() const { return impl_->dtype; }
const DistAlgorithm& MultiplyPlan::algorithm() const {
  if (impl_->direct)
    throw std::logic_error("distmm::MultiplyPlan: " + impl_->direct.name() +
                           " multiplies the block-cyclic layouts in place, no DistAlgorithm runs: use algorithm_name(), "
                           "algorithm_layout(), error_growth()");
  if (!impl_->algo) throw std::logic_error("distmm::MultiplyPlan: m, n or k is 0, no algorithm runs");
  return *impl_->algo;
}
std::string MultiplyPlan::algorithm_name() const {
  return impl_->direct ? impl_->direct.name() : impl_->algo ? impl_->algo->name() : "none";
}
std::string MultiplyPlan::algorithm_layout() const {
  const Impl& x = *impl_;
  if (x.direct)
    return "the " + std::to_string(x.direct.grid.g.nprow) + " x " + std::to_string(x.direct.grid.g.npcol) +
           " grid's own block-cyclic layout, " + x.direct.detail();
  return x.algo ? x.algo->layout() : "none";
}
double MultiplyPlan::error_growth() const {
  const double engine = impl_->engine ? impl_->engine->error_growth() : 1.0;  // (levels that ran)
  return (impl_->algo ? impl_->algo->error_growth() : 1.0) * engine;
}
bool MultiplyPlan::strassen_like() const { return impl_->algo && impl_->algo->strassen_like(); }
CommEstimate MultiplyPlan::words() const {
  return impl_->direct ? impl_->direct.analytic() : impl_->algo ? impl_->algo->analytic() : CommEstimate{};
}
std::size_t MultiplyPlan::memory_bytes() const { return impl_->memory; }
MovedWords MultiplyPlan::moved() const { return impl_->moved; }
MovedWords MultiplyPlan::moved_max() const { return impl_->moved_max; }
MovedWords MultiplyPlan::moved_total() const { return impl_->moved_total; }
bool MultiplyPlan::in_place_a() const { return impl_->ip_a.has_value(); }
bool MultiplyPlan::in_place_b() const { return impl_->ip_b.has_value(); }
bool MultiplyPlan::in_place_c() const { return impl_->ip_c.has_value(); }
const std::vector<int>& MultiplyPlan::ranks() const { return impl_->ranks; }
Memory MultiplyPlan::memory() const { return impl_->device ? Memory::device : Memory::host; }
bool MultiplyPlan::staged_a() const { return impl_->staged[0]; }
bool MultiplyPlan::staged_b() const { return impl_->staged[1]; }
bool MultiplyPlan::staged_c() const { return impl_->staged[2]; }
std::string MultiplyPlan::transport() const {
  if (!impl_->space) return "none";
  const std::array<bool, 3>& st = impl_->staged;
  const bool any = st[0] || st[1] || st[2];
  return impl_->space->transport() + (any ? "; " + names(st) + " staged from host memory" : "");
}
index_t MultiplyPlan::held_elements() const { return impl_->held; }
index_t MultiplyPlan::held_elements_identity() const { return impl_->held_identity; }
MultiplyPlan::ExecuteSeconds MultiplyPlan::last_seconds() const { return impl_->seconds; }

void MultiplyPlan::execute_call(Dtype dt, const void* alpha, const void* A, const void* B, const void* beta,
                                void* C) {
  Impl& x = *impl_;
  if (dt != x.dtype)
    throw std::invalid_argument(std::string("distmm::MultiplyPlan::execute: the plan is for ") + info(x.dtype).name +
                                " but was given " + info(dt).name + ": make a plan for " + info(dt).name);
  DeviceSpace& sp = *x.space;
  DeviceComm& dc = *x.dcomm;
  x.seconds = {};
  double t0 = MPI_Wtime();
  void* const C_caller = C;
  x.stage_in(A, B, C, beta);  // host matrices of a device plan into their device copies (counted in)
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T al = *static_cast<const T*>(alpha), be = *static_cast<const T*>(beta);
    T* c = static_cast<T*>(C);
    if (x.direct) {  // on the block-cyclic layouts themselves, nothing redistributed
      KSplitTimes times;
      x.direct.execute<T>(*x.engine, al, static_cast<const T*>(A), x.direct_ld[0], static_cast<const T*>(B),
                          x.direct_ld[1], be, c, x.direct_ld[2], times);
      x.seconds.multiply = MPI_Wtime() - t0;
      return;
    }
    if (!x.algo) {  // m, n or k is 0: C = beta C (beta = 0: zeros, C not read), in the space
      for_each_storage(x.lc.ranks[std::size_t(x.comm.rank())], [&](index_t off, index_t ld, index_t r, index_t n) {
        T* p = c + off;
        if (be != T(0)) sp.scale_add<T>(p, ld, p, ld, r, n, be, T(0));
        else
          for (index_t j = 0; j < n; ++j) sp.zero(p + j * ld, std::size_t(r) * sizeof(T), DeviceSpace::Lane::compute);
      });
      sp.synchronize();
      x.seconds.multiply = MPI_Wtime() - t0, t0 = MPI_Wtime();
      return;
    }
    // The operands in the algorithm's layout, in the space: in place, or redistributed into the
    // plan's buffers (reserved by the plan).
    auto operand = [&](const Piece& p, const std::optional<InPlace>& ip, const Redistribution& r, const T* src,
                       bool conj, DeviceBlock& buf) -> LocalBlock {
      if (ip) {
        r.execute<T>(sp, dc, src, nullptr, x.scratch, conj, nullptr, true);  // the others' shares, if any move
        return {src + ip->offset, p.rows(), p.cols(), ip->ld};
      }
      r.execute<T>(sp, dc, src, buf.as<T>(), x.scratch, conj);
      return {buf.as<T>(), p.rows(), p.cols(), std::max<index_t>(1, p.rows())};
    };
    const LocalBlock a = operand(x.pa, x.ip_a, x.ra, static_cast<const T*>(A), x.conj_a, x.abuf);
    const LocalBlock b = operand(x.pb, x.ip_b, x.rb, static_cast<const T*>(B), x.conj_b, x.bbuf);
    T* cp = nullptr;
    index_t ldc = std::max<index_t>(1, x.pc.rows());
    const T zero(0);
    if (x.ip_c) cp = c + x.ip_c->offset, ldc = x.ip_c->ld;
    else cp = x.cbuf.as<T>();
    const MultiplyCall call{dt, &al, a, b, x.ip_c ? &be : &zero, cp, x.pc.rows(), x.pc.cols(), ldc};
    // The parts' boundaries: on the host the lanes are settled there already; on a GPU this
    // waits for the queued unpacking (the algorithm's first transfer would wait for it too).
    auto lap = [&](double& part) {
      sp.synchronize();
      const double t = MPI_Wtime();
      part = t - t0, t0 = t;
    };
    lap(x.seconds.redistribute_in);
    if (x.algo_in_space) {
      sp.comm_waits_for_compute();  // the algorithm's transfers read what the unpacking wrote
      x.algo->multiply_device(sp, call);
      sp.compute_waits_for_comm();  // its last reduction into C, before C is read
    } else {
      x.algo->multiply_call(*x.engine, call);
    }
    lap(x.seconds.multiply);
    if (!x.ip_c) x.rc.execute<T>(sp, dc, cp, c, x.scratch, false, &be);
    lap(x.seconds.redistribute_out);
  });
  x.stage_out(C_caller);  // (counted out)
  if (C_caller != C) x.seconds.redistribute_out += MPI_Wtime() - t0;
}

}  // namespace distmm
