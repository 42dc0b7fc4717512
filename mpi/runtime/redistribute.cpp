// The plan of a redistribution: which tiles meet, per peer (redistribute.hpp).
#include "redistribute.hpp"

#include <stdexcept>

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

}  // namespace

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
