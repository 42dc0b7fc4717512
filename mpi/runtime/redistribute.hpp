// Any layout to any layout (layout.hpp): the intersections of the ranks' tiles, packed into one
// MPI_Alltoallv. Planned once per pair of layouts; executed for any element type and any base
// pointers laid out alike. A transpose is free (the source's layout is transposed(), read with
// its strides while packing), a conjugate is applied while packing, and the receiving side can
// add into what is there: dst = beta dst + src (beta = 0 never reads dst). A rank's own share
// is copied directly, never through MPI; where no rank sends anything the all-to-all is skipped.
#pragma once
#include <algorithm>
#include <complex>
#include <type_traits>
#include <vector>

#include "../../src/core/matrix.hpp"
#include "comm.hpp"
#include "layout.hpp"

namespace distmm {

// Elements of one tile of the source meeting one tile of the destination: the product of the
// row and column index pairs, visited columns outer, rows inner (the packing order).
struct TilePair {
  int src_tile = 0, dst_tile = 0;
  std::vector<SegPair> rows, cols;
  static index_t total(const std::vector<SegPair>& s) {
    index_t t = 0;
    for (const SegPair& x : s) t += x.length;
    return t;
  }
  index_t elements() const { return total(rows) * total(cols); }
};

class Redistribution {
 public:
  Redistribution() = default;
  // Collective on comm (src and dst resolved on it, the same rows x cols).
  Redistribution(const ResolvedLayout& src, const ResolvedLayout& dst, const Comm& comm);

  // Elements this rank sends to other ranks, receives from them, and copies to itself.
  index_t sent() const { return sent_; }
  index_t received() const { return received_; }
  index_t kept() const { return kept_; }
  // Whether any rank sends anything (the same on every rank).
  bool moves() const { return moves_; }

  // Collective: dst (this rank's base pointer in the destination layout) from src (in the
  // source's); conj: the conjugate of each element; beta non-null and non-zero: dst = beta dst +
  // src. skip_own: this rank's own share is already in place (nothing copied to itself).
  template <class T>
  void execute(const T* src, T* dst, const Comm& comm, bool conj = false, const T* beta = nullptr,
               bool skip_own = false) const;

 private:
  template <class F>
  static void visit(const Tile* s, const Tile* d, const TilePair& p, F&& f);
  RankTiles src_mine_, dst_mine_;
  std::vector<std::vector<TilePair>> send_, recv_;  // per peer; send_[me]: the own copy
  std::vector<index_t> send_count_, recv_count_;
  index_t sent_ = 0, received_ = 0, kept_ = 0;
  bool moves_ = false;
  int me_ = 0;
};

// f(source offset, source stride, destination offset, destination stride, n) for each run of n
// elements of the pair (one segment of a column) in the packing order; a null tile gives 0s.
template <class F>
void Redistribution::visit(const Tile* s, const Tile* d, const TilePair& p, F&& f) {
  const index_t srs = s ? s->row_stride() : 0, scs = s ? s->col_stride() : 0, so = s ? s->offset : 0;
  const index_t drs = d ? d->row_stride() : 0, dcs = d ? d->col_stride() : 0, dof = d ? d->offset : 0;
  for (const SegPair& c : p.cols)
    for (index_t j = 0; j < c.length; ++j)
      for (const SegPair& r : p.rows)
        f(so + r.src * srs + (c.src + j) * scs, srs, dof + r.dst * drs + (c.dst + j) * dcs, drs, r.length);
}

template <class T>
void Redistribution::execute(const T* src, T* dst, const Comm& comm, bool conj, const T* beta,
                             bool skip_own) const {
  const bool add = beta && *beta != T(0);
  auto value = [conj](T v) {
    if constexpr (is_complex_v<T>) return conj ? std::conj(v) : v;
    else return (void)conj, v;
  };
  auto put = [&](T* d, T v) { *d = add ? *beta * *d + v : v; };
  // The own share, element by element from src to dst.
  if (!skip_own)
    for (const TilePair& p : send_[std::size_t(me_)])
      visit(&src_mine_[std::size_t(p.src_tile)], &dst_mine_[std::size_t(p.dst_tile)], p,
            [&](index_t sa, index_t ss, index_t da, index_t ds, index_t n) {
              if (ss == 1 && ds == 1 && !add && !conj) std::copy(src + sa, src + sa + n, dst + da);
              else
                for (index_t i = 0; i < n; ++i) put(dst + da + i * ds, value(src[sa + i * ss]));
            });
  if (!moves_) return;
  const int P = comm.size();
  std::vector<int> sc(static_cast<std::size_t>(P)), sd(static_cast<std::size_t>(P)), rc(static_cast<std::size_t>(P)), rd(static_cast<std::size_t>(P));
  index_t st = 0, rt = 0;
  for (int q = 0; q < P; ++q) {
    sd[std::size_t(q)] = mpi_count(st), rd[std::size_t(q)] = mpi_count(rt);
    sc[std::size_t(q)] = mpi_count(send_count_[std::size_t(q)]), rc[std::size_t(q)] = mpi_count(recv_count_[std::size_t(q)]);
    st += send_count_[std::size_t(q)], rt += recv_count_[std::size_t(q)];
  }
  mpi_count(st), mpi_count(rt);  // displacements are ints too
  auto sbuf = aligned_alloc_array<T>(std::size_t(std::max<index_t>(st, 1)));
  auto rbuf = aligned_alloc_array<T>(std::size_t(std::max<index_t>(rt, 1)));
  for (int q = 0; q < P; ++q) {
    if (q == me_) continue;
    T* out = sbuf.get() + sd[std::size_t(q)];
    for (const TilePair& p : send_[std::size_t(q)])
      visit(&src_mine_[std::size_t(p.src_tile)], nullptr, p, [&](index_t sa, index_t ss, index_t, index_t, index_t n) {
        if (ss == 1 && !conj) out = std::copy(src + sa, src + sa + n, out);
        else
          for (index_t i = 0; i < n; ++i) *out++ = value(src[sa + i * ss]);
      });
  }
  MPI_Alltoallv(sbuf.get(), sc.data(), sd.data(), mpi_type<T>(), rbuf.get(), rc.data(), rd.data(), mpi_type<T>(),
                comm.get());
  for (int q = 0; q < P; ++q) {
    if (q == me_) continue;
    const T* in = rbuf.get() + rd[std::size_t(q)];
    for (const TilePair& p : recv_[std::size_t(q)])
      visit(nullptr, &dst_mine_[std::size_t(p.dst_tile)], p, [&](index_t, index_t, index_t da, index_t ds, index_t n) {
        if (ds == 1 && !add) std::copy(in, in + n, dst + da), in += n;
        else
          for (index_t i = 0; i < n; ++i) put(dst + da + i * ds, *in++);
      });
  }
}

}  // namespace distmm
