// The plan of a redistribution: which tiles meet, per peer (redistribute.hpp).
#include "redistribute.hpp"

#include <stdexcept>

#include "../../node/engine.hpp"

namespace distmm {
namespace {

// The pairs of a's tiles and b's that share elements, in the packing order (a's tiles outer).
std::vector<TilePair> meeting(const RankTiles& a, const RankTiles& b) {
  std::vector<TilePair> out;
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t j = 0; j < b.size(); ++j) {
      if (!boxes_meet(a[i], b[j])) continue;
      TilePair p;
      p.src_tile = int(i), p.dst_tile = int(j);
      p.rows = seg_overlap(a[i].rows, b[j].rows);
      if (p.rows.empty()) continue;
      p.cols = seg_overlap(a[i].cols, b[j].cols);
      if (p.cols.empty()) continue;
      out.push_back(std::move(p));
    }
  return out;
}

index_t elements(const std::vector<TilePair>& v) {
  index_t n = 0;
  for (const TilePair& p : v) n += p.elements();
  return n;
}

// f(source offset, row stride, column stride, destination offset, row stride, column stride,
// rows, cols) for each rectangle of the pair (a row segment pair times a column segment pair),
// in the packing order. A null tile is a packed buffer whose pair starts at element `packed`:
// the pair's elements columns outer, rows inner.
template <class F>
void rectangles(const Tile* s, const Tile* d, const TilePair& p, index_t packed, F&& f) {
  const index_t prows = TilePair::total(p.rows);
  index_t col_at = 0;
  for (const SegPair& c : p.cols) {
    index_t row_at = 0;
    for (const SegPair& r : p.rows) {
      auto side = [&](const Tile* t, index_t lr, index_t lc, index_t (&out)[3]) {
        if (t) out[0] = t->addr(lr, lc), out[1] = t->row_stride(), out[2] = t->col_stride();
        else out[0] = packed + col_at * prows + row_at, out[1] = 1, out[2] = prows;
      };
      index_t a[3], b[3];
      side(s, r.src, c.src, a), side(d, r.dst, c.dst, b);
      f(a[0], a[1], a[2], b[0], b[1], b[2], r.length, c.length);
      row_at += r.length;
    }
    col_at += c.length;
  }
}

}  // namespace

void Redistribution::execute_call(DeviceSpace& sp, DeviceComm& dc, Dtype dt, const void* src, void* dst, bool conj,
                                  const void* beta, bool skip_own, Scratch& scratch) const {
  const std::size_t e = size_of(dt);
  // The pair's rectangles from src (tile st, or packed at `packed`) to dst (tile dt_, or packed).
  auto move = [&](const void* from, const Tile* st, void* to, const Tile* dtile, const TilePair& p, index_t packed,
                  bool cj, const void* b) {
    rectangles(st, dtile, p, packed,
               [&](index_t so, index_t srs, index_t scs, index_t d0, index_t drs, index_t dcs, index_t r, index_t c) {
                 sp.copy_strided(static_cast<char*>(to) + std::size_t(d0) * e, drs, dcs,
                                 static_cast<const char*>(from) + std::size_t(so) * e, srs, scs, r, c, dt, cj, b,
                                 DeviceSpace::Lane::compute);
               });
  };
  if (!skip_own)
    for (const TilePair& p : send_[std::size_t(me_)])
      move(src, &src_mine_[std::size_t(p.src_tile)], dst, &dst_mine_[std::size_t(p.dst_tile)], p, 0, conj, beta);
  if (!moves_) return;
  const int P = int(send_.size());
  index_t st = 0, rt = 0;
  for (int q = 0; q < P; ++q) st += send_count_[std::size_t(q)], rt += recv_count_[std::size_t(q)];
  reserve(sp, scratch.send, std::size_t(st) * e);
  reserve(sp, scratch.recv, std::size_t(rt) * e);
  void* sbuf = scratch.send.as<void>();
  void* rbuf = scratch.recv.as<void>();
  index_t at = 0;
  for (int q = 0; q < P; ++q)
    if (q != me_)
      for (const TilePair& p : send_[std::size_t(q)])
        move(src, &src_mine_[std::size_t(p.src_tile)], sbuf, nullptr, p, at, conj, nullptr), at += p.elements();
  sp.comm_waits_for_compute();
  const CommCounters before = comm_counters();  // reported by the plan (sent()), not counted here
  dc.all_to_all_v_call(sbuf, send_count_, rbuf, recv_count_, dt);
  comm_counters() = before;
  sp.compute_waits_for_comm();
  at = 0;
  for (int q = 0; q < P; ++q)
    if (q != me_)
      for (const TilePair& p : recv_[std::size_t(q)])
        move(rbuf, nullptr, dst, &dst_mine_[std::size_t(p.dst_tile)], p, at, false, beta), at += p.elements();
}

void Redistribution::execute_host(Dtype dt, const void* src, void* dst, const Comm& comm, bool conj, const void* beta,
                                  bool skip_own) const {
  // A host space needs an engine, which only its products use: none run here.
  thread_local std::unique_ptr<Engine> engine = make_engine("blas", {});
  thread_local std::unique_ptr<DeviceSpace> space = make_host_space(*engine);
  std::unique_ptr<DeviceComm> dc = space->comm(comm);
  Scratch scratch;
  execute_call(*space, *dc, dt, src, dst, conj, beta, skip_own, scratch);
  space->synchronize();
}

Redistribution::Redistribution(const ResolvedLayout& src, const ResolvedLayout& dst, const Comm& comm) {
  const int P = comm.size();
  me_ = comm.rank();
  if (src.rows != dst.rows || src.cols != dst.cols || src.ranks.size() != std::size_t(P) ||
      dst.ranks.size() != std::size_t(P))
    throw std::logic_error("Redistribution: layouts of different shapes or communicators");
  src_mine_ = src.ranks[std::size_t(me_)], dst_mine_ = dst.ranks[std::size_t(me_)];
  send_.resize(static_cast<std::size_t>(P)), recv_.resize(static_cast<std::size_t>(P));
  send_count_.assign(std::size_t(P), 0), recv_count_.assign(std::size_t(P), 0);
  for (int q = 0; q < P; ++q) {
    send_[std::size_t(q)] = meeting(src_mine_, dst.ranks[std::size_t(q)]);
    if (q == me_) {
      kept_ = elements(send_[std::size_t(q)]);
      continue;
    }
    recv_[std::size_t(q)] = meeting(src.ranks[std::size_t(q)], dst_mine_);
    send_count_[std::size_t(q)] = elements(send_[std::size_t(q)]);
    recv_count_[std::size_t(q)] = elements(recv_[std::size_t(q)]);
    sent_ += send_count_[std::size_t(q)], received_ += recv_count_[std::size_t(q)];
  }
  int any = sent_ > 0;
  MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, comm.get());
  moves_ = any != 0;
}

}  // namespace distmm
