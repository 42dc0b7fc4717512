// The plan of a multiply on the callers' layouts, and its execution (multiply.hpp).
#include "multiply.hpp"

#include <array>
#include <numeric>
#include <stdexcept>

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
  std::unique_ptr<DistAlgorithm> algo;  // null where m, n or k is 0
  Piece pa, pb, pc;
  ResolvedLayout lc;  // C as the caller holds it (k = 0 scales it)
  Redistribution ra, rb, rc;
  std::optional<InPlace> ip_a, ip_b, ip_c;
  std::vector<int> ranks;
  index_t held = 0, held_identity = 0;
  MovedWords moved, moved_max, moved_total;
  std::size_t memory = 0;
};

namespace {

std::string dims(index_t r, index_t c) { return std::to_string(r) + " x " + std::to_string(c); }

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

  x.engine = options.engine_ptr;
  if (!x.engine) x.own_engine = make_engine(options.engine, options.engine_options), x.engine = x.own_engine.get();
  x.ranks.resize(static_cast<std::size_t>(P));
  std::iota(x.ranks.begin(), x.ranks.end(), 0);
  const GemmShape s = x.shape;
  if (s.m == 0 || s.n == 0 || s.k == 0) return;  // nothing to multiply (k = 0: C = beta C)

  AlgoOptions o = options.algo;
  o.dtype = dt;
  o.engine = x.engine;
  // One memory limit for both builds below, so that they plan alike (the limit is collective).
  if (o.mem_limit == 0) o.mem_limit = static_cast<std::size_t>(plan_memory_limit(x.comm, s, o));
  std::unique_ptr<DistAlgorithm> first = make_algorithm(options.algorithm, x.comm, s, o);

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
  x.memory = static_cast<std::size_t>(x.comm.allreduce_max_uncounted(bytes));
}

MultiplyPlan::~MultiplyPlan() = default;
MultiplyPlan::MultiplyPlan(MultiplyPlan&&) noexcept = default;
MultiplyPlan& MultiplyPlan::operator=(MultiplyPlan&&) noexcept = default;

GemmShape MultiplyPlan::shape() const { return impl_->shape; }
Dtype MultiplyPlan::dtype() const { return impl_->dtype; }
const DistAlgorithm& MultiplyPlan::algorithm() const {
  if (!impl_->algo) throw std::logic_error("distmm::MultiplyPlan: m, n or k is 0, no algorithm runs");
  return *impl_->algo;
}
std::string MultiplyPlan::algorithm_name() const { return impl_->algo ? impl_->algo->name() : "none"; }
CommEstimate MultiplyPlan::words() const { return impl_->algo ? impl_->algo->analytic() : CommEstimate{}; }
std::size_t MultiplyPlan::memory_bytes() const { return impl_->memory; }
MovedWords MultiplyPlan::moved() const { return impl_->moved; }
MovedWords MultiplyPlan::moved_max() const { return impl_->moved_max; }
MovedWords MultiplyPlan::moved_total() const { return impl_->moved_total; }
bool MultiplyPlan::in_place_a() const { return impl_->ip_a.has_value(); }
bool MultiplyPlan::in_place_b() const { return impl_->ip_b.has_value(); }
bool MultiplyPlan::in_place_c() const { return impl_->ip_c.has_value(); }
const std::vector<int>& MultiplyPlan::ranks() const { return impl_->ranks; }
index_t MultiplyPlan::held_elements() const { return impl_->held; }
index_t MultiplyPlan::held_elements_identity() const { return impl_->held_identity; }

void MultiplyPlan::execute_call(Dtype dt, const void* alpha, const void* A, const void* B, const void* beta,
                                void* C) {
  Impl& x = *impl_;
  if (dt != x.dtype)
    throw std::invalid_argument(std::string("distmm::MultiplyPlan::execute: the plan is for ") + info(x.dtype).name +
                                " but was given " + info(dt).name + ": make a plan for " + info(dt).name);
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T al = *static_cast<const T*>(alpha), be = *static_cast<const T*>(beta);
    T* c = static_cast<T*>(C);
    if (!x.algo) {  // m, n or k is 0: C = beta C (beta = 0: zeros, C not read)
      for (const Tile& t : x.lc.ranks[std::size_t(x.comm.rank())])
        for (index_t j = 0; j < Tile::total(t.cols); ++j)
          for (index_t i = 0; i < Tile::total(t.rows); ++i) {
            T& e = c[t.addr(i, j)];
            e = be == T(0) ? T(0) : be * e;
          }
      return;
    }
    auto operand = [&](const Piece& p, const std::optional<InPlace>& ip, const Redistribution& r, const T* src,
                       bool conj, AlignedPtr<T>& buf) -> LocalBlock {
      if (ip) {
        r.execute<T>(src, nullptr, x.comm, conj, nullptr, true);  // the others' shares, if any move
        return {src + ip->offset, p.rows(), p.cols(), ip->ld};
      }
      buf = aligned_alloc_array<T>(std::size_t(p.rows() * p.cols()));
      r.execute<T>(src, buf.get(), x.comm, conj);
      return {buf.get(), p.rows(), p.cols(), std::max<index_t>(1, p.rows())};
    };
    AlignedPtr<T> abuf, bbuf, cbuf;
    const LocalBlock a = operand(x.pa, x.ip_a, x.ra, static_cast<const T*>(A), x.conj_a, abuf);
    const LocalBlock b = operand(x.pb, x.ip_b, x.rb, static_cast<const T*>(B), x.conj_b, bbuf);
    T* cp = nullptr;
    index_t ldc = std::max<index_t>(1, x.pc.rows());
    const T zero(0);
    if (x.ip_c) cp = c + x.ip_c->offset, ldc = x.ip_c->ld;
    else cbuf = aligned_alloc_array<T>(std::size_t(x.pc.rows() * x.pc.cols())), cp = cbuf.get();
    x.algo->multiply_call(*x.engine, MultiplyCall{dt, &al, a, b, x.ip_c ? &be : &zero, cp, x.pc.rows(), x.pc.cols(), ldc});
    if (!x.ip_c) x.rc.execute<T>(cbuf.get(), c, x.comm, false, &be);
  });
}

}  // namespace distmm
