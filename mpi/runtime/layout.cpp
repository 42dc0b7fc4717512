// Layouts to tiles, their checks, overlaps and the relabeling of ranks (layout.hpp).
#include "layout.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace distmm {

struct LayoutAccess {
  static Layout make(Layout::Kind k, index_t m, index_t n) {
    Layout l;
    l.kind_ = k, l.m_ = m, l.n_ = n;
    return l;
  }
  static void set_bc(Layout& l, index_t mb, index_t nb, int nprow, int npcol, int rsrc, int csrc, index_t lld,
                     GridOrder g) {
    l.mb_ = mb, l.nb_ = nb, l.nprow_ = nprow, l.npcol_ = npcol, l.rsrc_ = rsrc, l.csrc_ = csrc, l.ld_ = lld;
    l.grid_order_ = g;
  }
  static void set_slabs(Layout& l, std::vector<index_t> sizes, index_t ld, StorageOrder o) {
    l.sizes_ = std::move(sizes), l.ld_ = ld, l.order_ = o;
  }
  static void set_blocks(Layout& l, std::vector<LayoutBlock> b) { l.blocks_ = std::move(b); }
  static ResolvedLayout resolve(const Layout& l, const Comm& comm, const std::string& name);
};

Layout Layout::block_cyclic(index_t m, index_t n, index_t mb, index_t nb, int nprow, int npcol, int rsrc,
                            int csrc, index_t lld, GridOrder order) {
  Layout l = LayoutAccess::make(Kind::block_cyclic, m, n);
  LayoutAccess::set_bc(l, mb, nb, nprow, npcol, rsrc, csrc, lld, order);
  return l;
}

Layout Layout::scalapack(const int desc[9], int nprow, int npcol, GridOrder order) {
  if (desc[0] != 1)
    throw std::invalid_argument("Layout::scalapack: descriptor type " + std::to_string(desc[0]) +
                                " is not 1 (BLOCK_CYCLIC_2D): pass a descinit_ descriptor");
  return block_cyclic(desc[2], desc[3], desc[4], desc[5], nprow, npcol, desc[6], desc[7], desc[8], order);
}

Layout Layout::row_slabs(index_t m, index_t n, std::vector<index_t> sizes, index_t ld, StorageOrder order) {
  Layout l = LayoutAccess::make(Kind::row_slabs, m, n);
  LayoutAccess::set_slabs(l, std::move(sizes), ld, order);
  return l;
}

Layout Layout::col_slabs(index_t m, index_t n, std::vector<index_t> sizes, index_t ld, StorageOrder order) {
  Layout l = LayoutAccess::make(Kind::col_slabs, m, n);
  LayoutAccess::set_slabs(l, std::move(sizes), ld, order);
  return l;
}

Layout Layout::blocks(index_t m, index_t n, std::vector<LayoutBlock> blocks) {
  Layout l = LayoutAccess::make(Kind::blocks, m, n);
  LayoutAccess::set_blocks(l, std::move(blocks));
  return l;
}

std::vector<index_t> Layout::even_sizes(index_t n, int parts) {
  const Partition1D p{n, std::max(parts, 1)};
  std::vector<index_t> s(static_cast<std::size_t>(std::max(parts, 1)));
  for (int i = 0; i < p.parts; ++i) s[std::size_t(i)] = p.size(i);
  return s;
}

const char* to_string(Layout::Kind k) {
  switch (k) {
    case Layout::Kind::block_cyclic: return "block-cyclic";
    case Layout::Kind::row_slabs: return "row slabs";
    case Layout::Kind::col_slabs: return "column slabs";
    case Layout::Kind::blocks: return "blocks";
  }
  return "?";
}

namespace {

std::string str(index_t v) { return std::to_string(v); }

// Block-cyclic segments of one dimension on process coordinate `coord`.
std::vector<Seg> cyclic_segs(index_t n, index_t b, int src, int np, int coord) {
  std::vector<Seg> s;
  index_t local = 0;
  for (index_t blk = 0, g = 0; g < n; ++blk, g += b)
    if (static_cast<int>((src + blk) % np) == coord) {
      const index_t len = std::min(b, n - g);
      s.push_back({g, len, local});
      local += len;
    }
  return s;
}

// One tile: rows [r0, r0 + nr) x columns [c0, c0 + nc) (nothing when empty).
void add_block(RankTiles& t, index_t r0, index_t nr, index_t c0, index_t nc, index_t offset, index_t ld,
               StorageOrder o) {
  if (nr <= 0 || nc <= 0) return;
  Tile x;
  x.rows = {{r0, nr, 0}}, x.cols = {{c0, nc, 0}};
  x.offset = offset, x.ld = ld, x.order = o;
  t.push_back(std::move(x));
}

index_t tight_ld(index_t rows, index_t cols, StorageOrder o) {
  return std::max<index_t>(1, o == StorageOrder::col_major ? rows : cols);
}

// ld against what the storage order needs; "" when fine.
std::string check_ld(const std::string& what, index_t ld, index_t rows, index_t cols, StorageOrder o, int rank) {
  const index_t need = tight_ld(rows, cols, o);
  if (ld >= need) return "";
  return what + ": leading dimension " + str(ld) + " on rank " + std::to_string(rank) + " is below its " +
         (o == StorageOrder::col_major ? "local row count " : "local column count ") + str(need) + " (" +
         (o == StorageOrder::col_major ? "column" : "row") + "-major storage): use ld >= " + str(need) +
         " (or 0 for tight)";
}

// The same on every rank, or a message (collective): min and max of each value agree.
std::string agree_on(const std::vector<index_t>& sig, const Comm& comm, const std::string& name) {
  std::vector<index_t> lo = sig, hi = sig;
  MPI_Allreduce(MPI_IN_PLACE, lo.data(), mpi_count(index_t(lo.size())), MPI_INT64_T, MPI_MIN, comm.get());
  MPI_Allreduce(MPI_IN_PLACE, hi.data(), mpi_count(index_t(hi.size())), MPI_INT64_T, MPI_MAX, comm.get());
  return lo == hi ? "" : name + ": the ranks passed different layouts (kind, sizes or grid): every rank must "
                               "describe the same distribution";
}

// Blocks that overlap or leave part of rows x cols uncovered; "" when they tile it exactly.
std::string check_cover(const std::vector<std::array<index_t, 5>>& b, index_t rows, index_t cols,
                        const std::string& name) {
  index_t area = 0;
  for (const auto& x : b) {
    if (x[0] < 0 || x[1] < 0 || x[2] < 0 || x[3] < 0 || x[0] + x[2] > rows || x[1] + x[3] > cols)
      return name + ": block at (" + str(x[0]) + ", " + str(x[1]) + ") of " + str(x[2]) + " x " + str(x[3]) +
             " on rank " + str(x[4]) + " lies outside the " + str(rows) + " x " + str(cols) +
             " matrix: give blocks inside it";
    area += x[2] * x[3];
  }
  std::vector<std::size_t> order(b.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) { return b[i][0] < b[j][0]; });
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto& x = b[order[i]];
    if (x[2] == 0 || x[3] == 0) continue;
    for (std::size_t j = i + 1; j < order.size() && b[order[j]][0] < x[0] + x[2]; ++j) {
      const auto& y = b[order[j]];
      if (y[2] > 0 && y[3] > 0 && y[1] < x[1] + x[3] && x[1] < y[1] + y[3])
        return name + ": blocks at (" + str(x[0]) + ", " + str(x[1]) + ") on rank " + str(x[4]) + " and (" +
               str(y[0]) + ", " + str(y[1]) + ") on rank " + str(y[4]) +
               " overlap: each element must be held by exactly one block";
    }
  }
  if (area != rows * cols)
    return name + ": the blocks cover " + str(area) + " of the " + str(rows) + " x " + str(cols) + " = " +
           str(rows * cols) + " elements: add the missing blocks so that every element is held once";
  return "";
}

}  // namespace

ResolvedLayout LayoutAccess::resolve(const Layout& l, const Comm& comm, const std::string& name) {
  using Kind = Layout::Kind;
  const int P = comm.size(), me = comm.rank();
  ResolvedLayout out;
  out.rows = l.m_, out.cols = l.n_;
  out.ranks.assign(std::size_t(P), {});
  std::string global, local;
  std::vector<index_t> sig = {index_t(l.kind_), l.m_, l.n_};
  if (l.kind_ == Kind::block_cyclic)
    sig.insert(sig.end(), {l.mb_, l.nb_, l.nprow_, l.npcol_, l.rsrc_, l.csrc_, index_t(l.grid_order_)});
  if (l.kind_ == Kind::row_slabs || l.kind_ == Kind::col_slabs) {
    sig.push_back(index_t(l.sizes_.size()));
    index_t h = 0;
    for (std::size_t i = 0; i < l.sizes_.size(); ++i) h = h * 1000003 + l.sizes_[i];
    sig.push_back(h);
  }
  sig.resize(12, 0);
  global = agree_on(sig, comm, name);
  if (!global.empty()) {
    out.error = global;
    return out;
  }
  if (l.m_ < 0 || l.n_ < 0) {
    out.error = name + ": " + str(l.m_) + " x " + str(l.n_) + " is not a matrix size: use sizes >= 0";
    return out;
  }
  if (l.kind_ == Kind::block_cyclic) {
    const int grid = l.nprow_ * l.npcol_;
    if (l.mb_ < 1 || l.nb_ < 1)
      global = name + ": block size " + str(l.mb_) + " x " + str(l.nb_) + " is empty: use mb, nb >= 1";
    else if (l.nprow_ < 1 || l.npcol_ < 1 || grid > P)
      global = name + ": a " + std::to_string(l.nprow_) + " x " + std::to_string(l.npcol_) + " process grid on " +
               std::to_string(P) + " ranks: use nprow, npcol >= 1 with nprow * npcol <= " + std::to_string(P);
    else if (l.rsrc_ < 0 || l.rsrc_ >= l.nprow_ || l.csrc_ < 0 || l.csrc_ >= l.npcol_)
      global = name + ": rsrc " + std::to_string(l.rsrc_) + ", csrc " + std::to_string(l.csrc_) +
               " outside the " + std::to_string(l.nprow_) + " x " + std::to_string(l.npcol_) +
               " grid: use 0 <= rsrc < nprow and 0 <= csrc < npcol (-1, replicated, is not taken)";
    if (global.empty()) {
      for (int p = 0; p < grid; ++p) {
        const bool rm = l.grid_order_ == GridOrder::row_major;
        const int pr = rm ? p / l.npcol_ : p % l.nprow_, pc = rm ? p % l.npcol_ : p / l.nprow_;
        Tile t;
        t.rows = cyclic_segs(l.m_, l.mb_, l.rsrc_, l.nprow_, pr);
        t.cols = cyclic_segs(l.n_, l.nb_, l.csrc_, l.npcol_, pc);
        const index_t lr = Tile::total(t.rows);
        t.ld = l.ld_ > 0 ? l.ld_ : std::max<index_t>(1, lr);
        if (p == me) local += check_ld(name, t.ld, lr, Tile::total(t.cols), StorageOrder::col_major, me);
        if (!t.rows.empty() && !t.cols.empty()) out.ranks[std::size_t(p)].push_back(std::move(t));
      }
    }
  } else if (l.kind_ == Kind::row_slabs || l.kind_ == Kind::col_slabs) {
    const bool rows = l.kind_ == Kind::row_slabs;
    const index_t along = rows ? l.m_ : l.n_, across = rows ? l.n_ : l.m_;
    index_t sum = 0;
    bool negative = false;
    for (index_t s : l.sizes_) sum += s, negative |= s < 0;
    if (l.sizes_.size() != std::size_t(P))
      global = name + ": " + std::to_string(l.sizes_.size()) + " slab sizes for " + std::to_string(P) +
               " ranks: give one size per rank (0 for a rank holding nothing)";
    else if (negative || sum != along)
      global = name + ": the " + (rows ? "row" : "column") + " slab sizes add up to " + str(sum) + ", not " +
               (rows ? "m = " : "n = ") + str(along) + ": give sizes >= 0 that sum to " + str(along);
    if (global.empty()) {
      index_t at = 0;
      for (int p = 0; p < P; ++p) {
        const index_t s = l.sizes_[std::size_t(p)];
        const index_t nr = rows ? s : across, nc = rows ? across : s;
        const index_t ld = l.ld_ > 0 ? l.ld_ : tight_ld(nr, nc, l.order_);
        if (p == me) local += check_ld(name, ld, nr, nc, l.order_, me);
        add_block(out.ranks[std::size_t(p)], rows ? at : 0, nr, rows ? 0 : at, nc, 0, ld, l.order_);
        at += s;
      }
    }
  } else {
    // This rank's blocks; the others' are gathered (their geometry only).
    std::vector<index_t> mine;
    for (const LayoutBlock& b : l.blocks_) {
      if (b.owner >= P || b.owner < -1) {
        if (local.empty())
          local = name + ": a block names owner " + std::to_string(b.owner) + " of " + std::to_string(P) +
                  " ranks: use 0 <= owner < " + std::to_string(P) + " (or -1 for the rank passing it)";
        continue;
      }
      if (b.owner != -1 && b.owner != me) continue;
      const index_t ld = b.ld > 0 ? b.ld : tight_ld(b.rows, b.cols, b.order);
      if (local.empty() && b.rows > 0 && b.cols > 0) local = check_ld(name, ld, b.rows, b.cols, b.order, me);
      if (local.empty() && b.offset < 0)
        local = name + ": a block on rank " + std::to_string(me) + " has offset " + str(b.offset) +
                ": use offsets >= 0 from the rank's base pointer";
      mine.insert(mine.end(), {b.row, b.col, b.rows, b.cols});
      add_block(out.ranks[std::size_t(me)], b.row, b.rows, b.col, b.cols, b.offset, ld, b.order);
    }
    std::vector<int> counts(static_cast<std::size_t>(P)), displs(static_cast<std::size_t>(P));
    const int n = mpi_count(index_t(mine.size()));
    MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, comm.get());
    int total = 0;
    for (int r = 0; r < P; ++r) displs[std::size_t(r)] = total, total += counts[std::size_t(r)];
    std::vector<index_t> all(std::size_t(std::max(total, 1)));
    MPI_Allgatherv(mine.data(), n, MPI_INT64_T, all.data(), counts.data(), displs.data(), MPI_INT64_T, comm.get());
    std::vector<std::array<index_t, 5>> geo;
    for (int r = 0; r < P; ++r)
      for (int i = displs[std::size_t(r)]; i < displs[std::size_t(r)] + counts[std::size_t(r)]; i += 4) {
        const index_t* x = all.data() + i;
        geo.push_back({x[0], x[1], x[2], x[3], r});
        if (r != me) add_block(out.ranks[std::size_t(r)], x[0], x[2], x[1], x[3], 0, 1, StorageOrder::col_major);
      }
    global = check_cover(geo, l.m_, l.n_, name);
  }
  out.error = !global.empty() ? global : local;
  return out;
}

ResolvedLayout resolve(const Layout& l, const Comm& comm, const std::string& name) {
  return LayoutAccess::resolve(l, comm, name);
}

ResolvedLayout transposed(const ResolvedLayout& l) {
  ResolvedLayout t = l;
  std::swap(t.rows, t.cols);
  for (RankTiles& r : t.ranks)
    for (Tile& x : r) {
      std::swap(x.rows, x.cols);
      x.order = x.order == StorageOrder::col_major ? StorageOrder::row_major : StorageOrder::col_major;
    }
  return t;
}

Tile piece_tile(const Piece& p) {
  Tile t;
  auto segs = [](const std::vector<Run>& runs) {
    std::vector<Seg> s;
    index_t local = 0;
    for (const Run& r : runs)
      if (r.length > 0) s.push_back({r.global, r.length, local}), local += r.length;
    std::sort(s.begin(), s.end(), [](const Seg& a, const Seg& b) { return a.global < b.global; });
    return s;
  };
  t.rows = segs(p.row_runs), t.cols = segs(p.col_runs);
  t.ld = std::max<index_t>(1, p.rows());
  return t;
}

ResolvedLayout from_pieces(index_t rows, index_t cols, const std::vector<Piece>& pieces) {
  ResolvedLayout l;
  l.rows = rows, l.cols = cols;
  for (const Piece& p : pieces) {
    l.ranks.emplace_back();
    if (!p.empty()) l.ranks.back().push_back(piece_tile(p));
  }
  return l;
}

std::vector<SegPair> seg_overlap(const std::vector<Seg>& a, const std::vector<Seg>& b) {
  std::vector<SegPair> out;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const index_t lo = std::max(a[i].global, b[j].global);
    const index_t ea = a[i].global + a[i].length, eb = b[j].global + b[j].length;
    const index_t hi = std::min(ea, eb);
    if (lo < hi) out.push_back({a[i].local + lo - a[i].global, b[j].local + lo - b[j].global, hi - lo});
    if (ea <= eb) ++i;
    else ++j;
  }
  return out;
}

bool boxes_meet(const Tile& a, const Tile& b) {
  auto meet = [](const std::vector<Seg>& x, const std::vector<Seg>& y) {
    return !x.empty() && !y.empty() && x.front().global < y.back().global + y.back().length &&
           y.front().global < x.back().global + x.back().length;
  };
  return meet(a.rows, b.rows) && meet(a.cols, b.cols);
}

index_t local_extent(const RankTiles& tiles) {
  index_t e = 0;
  for (const Tile& t : tiles) {
    const index_t r = Tile::total(t.rows), c = Tile::total(t.cols);
    if (r > 0 && c > 0) e = std::max(e, t.addr(r - 1, c - 1) + 1);
  }
  return e;
}

index_t overlap_elements(const RankTiles& a, const RankTiles& b) {
  index_t v = 0;
  for (const Tile& x : a)
    for (const Tile& y : b) {
      if (!boxes_meet(x, y)) continue;
      index_t r = 0, c = 0;
      for (const SegPair& s : seg_overlap(x.rows, y.rows)) r += s.length;
      if (r == 0) continue;
      for (const SegPair& s : seg_overlap(x.cols, y.cols)) c += s.length;
      v += r * c;
    }
  return v;
}

std::vector<std::vector<index_t>> held_matrix(const ResolvedLayout& have, const ResolvedLayout& want,
                                              const Comm& comm) {
  const int P = comm.size();
  std::vector<index_t> row(static_cast<std::size_t>(P)), all(std::size_t(P) * std::size_t(P));
  for (int r = 0; r < P; ++r)
    row[std::size_t(r)] = overlap_elements(have.ranks[std::size_t(comm.rank())], want.ranks[std::size_t(r)]);
  MPI_Allgather(row.data(), P, MPI_INT64_T, all.data(), P, MPI_INT64_T, comm.get());
  std::vector<std::vector<index_t>> held(static_cast<std::size_t>(P));
  for (int p = 0; p < P; ++p) held[std::size_t(p)].assign(all.begin() + p * P, all.begin() + (p + 1) * P);
  return held;
}

std::vector<int> best_assignment(const std::vector<std::vector<index_t>>& held) {
  // Kuhn-Munkres with potentials on cost[r][p] = -((P + 1) held[p][r] + [p == r]): the most held
  // elements first (the fixed points together weigh less than one element), then the most fixed
  // points. Rows are parts, columns ranks (1-based inside).
  const int n = static_cast<int>(held.size());
  auto cost = [&](int r, int p) { return -((n + 1) * held[std::size_t(p)][std::size_t(r)] + (p == r ? 1 : 0)); };
  const index_t inf = std::numeric_limits<index_t>::max() / 4;
  std::vector<index_t> u(std::size_t(n) + 1, 0), v(std::size_t(n) + 1, 0);
  std::vector<int> match(std::size_t(n) + 1, 0), way(std::size_t(n) + 1, 0);  // match[column] = row
  for (int i = 1; i <= n; ++i) {
    match[0] = i;
    int j0 = 0;
    std::vector<index_t> minv(std::size_t(n) + 1, inf);
    std::vector<char> used(std::size_t(n) + 1, 0);
    do {
      used[std::size_t(j0)] = 1;
      const int i0 = match[std::size_t(j0)];
      index_t delta = inf;
      int j1 = 0;
      for (int j = 1; j <= n; ++j) {
        if (used[std::size_t(j)]) continue;
        const index_t cur = cost(i0 - 1, j - 1) - u[std::size_t(i0)] - v[std::size_t(j)];
        if (cur < minv[std::size_t(j)]) minv[std::size_t(j)] = cur, way[std::size_t(j)] = j0;
        if (minv[std::size_t(j)] < delta) delta = minv[std::size_t(j)], j1 = j;
      }
      for (int j = 0; j <= n; ++j) {
        if (used[std::size_t(j)]) u[std::size_t(match[std::size_t(j)])] += delta, v[std::size_t(j)] -= delta;
        else minv[std::size_t(j)] -= delta;
      }
      j0 = j1;
    } while (match[std::size_t(j0)] != 0);
    do {
      const int j1 = way[std::size_t(j0)];
      match[std::size_t(j0)] = match[std::size_t(j1)];
      j0 = j1;
    } while (j0 != 0);
  }
  std::vector<int> perm(std::size_t(n), 0);
  for (int j = 1; j <= n; ++j) perm[std::size_t(match[std::size_t(j)] - 1)] = j - 1;
  return perm;
}

std::optional<InPlace> in_place(const RankTiles& mine, const Tile& piece) {
  const index_t want = piece.elements();
  index_t have = 0;
  for (const Tile& t : mine) have += t.elements();
  if (have != want || overlap_elements(mine, {piece}) != want) return std::nullopt;
  if (want == 0) return InPlace{0, std::max<index_t>(1, Tile::total(piece.rows))};
  struct Chunk {
    const Tile* t;
    SegPair r, c;
  };
  std::vector<Chunk> chunks;
  for (const Tile& t : mine)
    for (const SegPair& c : seg_overlap(t.cols, piece.cols))
      for (const SegPair& r : seg_overlap(t.rows, piece.rows)) chunks.push_back({&t, r, c});
  // The piece's leading dimension: a tile's column stride where a chunk spans columns, else
  // from two chunks in different columns, else any (one column).
  const index_t prow = Tile::total(piece.rows);
  index_t ld = -1;
  for (const Chunk& x : chunks)
    if (x.c.length > 1) {
      ld = x.t->col_stride();
      break;
    }
  if (ld < 0)
    for (const Chunk& x : chunks)
      if (x.c.dst != chunks[0].c.dst) {
        const index_t da = x.t->addr(x.r.src, x.c.src) - chunks[0].t->addr(chunks[0].r.src, chunks[0].c.src);
        const index_t dl = x.c.dst - chunks[0].c.dst;
        if ((da - (x.r.dst - chunks[0].r.dst)) % dl != 0) return std::nullopt;
        ld = (da - (x.r.dst - chunks[0].r.dst)) / dl;
        break;
      }
  if (ld < 0) ld = std::max<index_t>(1, prow);
  if (ld < std::max<index_t>(1, prow)) return std::nullopt;
  const Chunk& f = chunks[0];
  const index_t base = f.t->addr(f.r.src, f.c.src) - f.r.dst - f.c.dst * ld;
  if (base < 0) return std::nullopt;
  for (const Chunk& x : chunks) {
    if (x.r.length > 1 && x.t->row_stride() != 1) return std::nullopt;
    if (x.c.length > 1 && x.t->col_stride() != ld) return std::nullopt;
    if (x.t->addr(x.r.src, x.c.src) != base + x.r.dst + x.c.dst * ld) return std::nullopt;
  }
  return InPlace{base, ld};
}

}  // namespace distmm
