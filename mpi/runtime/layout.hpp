// Any 2-D distribution of a matrix over the ranks of a communicator, as callers already hold
// their data (issue #41): ScaLAPACK's block-cyclic layout (a descriptor's m, n, mb, nb, rsrc,
// csrc, lld on an nprow x npcol BLACS grid), row or column slabs of any sizes, or a general
// list of blocks per rank. Each rank's part is described by element offsets from one base
// pointer per rank (given when data moves), leading dimensions and a storage order, so a layout
// is planned once and used with any buffers laid out alike.
//
// Inside, every layout is the same thing: per rank, a list of tiles, each the product of row
// segments and column segments (global ranges with their local indices) in one storage. A
// block-cyclic rank is one tile of many segments, a block of a list one tile of one segment
// each way, an algorithm's Piece one tile of its runs. redistribute.hpp moves data between any
// two such layouts.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "../../node/engine.hpp"  // Memory
#include "../../src/core/types.hpp"
#include "comm.hpp"
#include "partition.hpp"

namespace distmm {

// How a rank stores one block: BLAS's column-major (element (i, j) at i + j * ld) or row-major
// (at i * ld + j).
enum class StorageOrder { col_major, row_major };
// The order of a BLACS grid's processes: rank = prow * npcol + pcol (row-major, BLACS's
// default) or pcol * nprow + prow.
enum class GridOrder { row_major, col_major };

// One block of a matrix held by one rank.
struct LayoutBlock {
  index_t row = 0, col = 0;    // global index of its first element
  index_t rows = 0, cols = 0;  // its size
  int owner = -1;              // the rank that holds it (-1: the rank passing it)
  index_t offset = 0;          // elements from the owner's base pointer to the block's first
  index_t ld = 0;              // leading dimension (0: tight, rows or cols by the order)
  StorageOrder order = StorageOrder::col_major;
};

class Layout {
 public:
  enum class Kind { block_cyclic, row_slabs, col_slabs, blocks };

  // ScaLAPACK's block-cyclic layout: blocks of mb x nb, block row b on process row
  // (rsrc + b) mod nprow, block column on (csrc + b) mod npcol; this rank stores its blocks
  // column-major with leading dimension lld (0: tight, its local row count). Ranks beyond the
  // grid hold nothing.
  static Layout block_cyclic(index_t m, index_t n, index_t mb, index_t nb, int nprow, int npcol,
                             int rsrc = 0, int csrc = 0, index_t lld = 0,
                             GridOrder order = GridOrder::row_major);
  // The same from a ScaLAPACK descriptor (DTYPE 1: desc[2..8] = m, n, mb, nb, rsrc, csrc, lld).
  static Layout scalapack(const int desc[9], int nprow, int npcol, GridOrder order = GridOrder::row_major);
  // Rank r holds rows (columns) [sum of sizes before r, + sizes[r]), one per rank of the
  // communicator, any sizes (zero too); ld 0: tight.
  static Layout row_slabs(index_t m, index_t n, std::vector<index_t> sizes, index_t ld = 0,
                          StorageOrder order = StorageOrder::col_major);
  static Layout col_slabs(index_t m, index_t n, std::vector<index_t> sizes, index_t ld = 0,
                          StorageOrder order = StorageOrder::col_major);
  // Any blocks: each rank passes its own (owner -1 or its rank), or every rank the whole list
  // (the others' blocks then only name their owners). Together they must cover the matrix once.
  static Layout blocks(index_t m, index_t n, std::vector<LayoutBlock> blocks);
  // n split over `parts` as the algorithms split it (the first n % parts one larger).
  static std::vector<index_t> even_sizes(index_t n, int parts);

  // Where the data lives: host memory (the default) or each rank's GPU (the offsets then count
  // from device pointers; MultiplyPlan moves and multiplies them there).
  Layout with_memory(Memory where) const {
    Layout l = *this;
    l.memory_ = where;
    return l;
  }
  Memory memory() const { return memory_; }
  Kind kind() const { return kind_; }
  // A block-cyclic layout's blocking and grid (lld 0: tight), as given; none for other kinds.
  struct BlockCyclic {
    index_t mb = 1, nb = 1;
    int nprow = 1, npcol = 1, rsrc = 0, csrc = 0;
    index_t lld = 0;
    GridOrder order = GridOrder::row_major;
  };
  std::optional<BlockCyclic> block_cyclic_grid() const {
    if (kind_ != Kind::block_cyclic) return std::nullopt;
    return BlockCyclic{mb_, nb_, nprow_, npcol_, rsrc_, csrc_, ld_, grid_order_};
  }
  index_t rows() const { return m_; }
  index_t cols() const { return n_; }

 private:
  friend struct LayoutAccess;
  Kind kind_ = Kind::blocks;
  Memory memory_ = Memory::host;
  index_t m_ = 0, n_ = 0;
  index_t mb_ = 1, nb_ = 1, ld_ = 0;
  int nprow_ = 1, npcol_ = 1, rsrc_ = 0, csrc_ = 0;
  GridOrder grid_order_ = GridOrder::row_major;
  StorageOrder order_ = StorageOrder::col_major;
  std::vector<index_t> sizes_;
  std::vector<LayoutBlock> blocks_;
};

const char* to_string(Layout::Kind k);

// ---- the common form: tiles of segments ----

// Global indices [global, global + length) at local indices [local, local + length).
struct Seg {
  index_t global = 0, length = 0, local = 0;
};
// The product of row and column segments (each sorted by global index, disjoint) in one
// storage: local element (lr, lc) at offset + lr * rs + lc * cs.
struct Tile {
  std::vector<Seg> rows, cols;
  index_t offset = 0, ld = 1;
  StorageOrder order = StorageOrder::col_major;
  index_t row_stride() const { return order == StorageOrder::col_major ? 1 : ld; }
  index_t col_stride() const { return order == StorageOrder::col_major ? ld : 1; }
  index_t addr(index_t lr, index_t lc) const { return offset + lr * row_stride() + lc * col_stride(); }
  static index_t total(const std::vector<Seg>& s) {
    index_t t = 0;
    for (const Seg& x : s) t += x.length;
    return t;
  }
  index_t elements() const { return total(rows) * total(cols); }
};
using RankTiles = std::vector<Tile>;

// Indices both of two segment lists hold: `length` of them from local index src in the first
// and dst in the second.
struct SegPair {
  index_t src = 0, dst = 0, length = 0;
};
std::vector<SegPair> seg_overlap(const std::vector<Seg>& a, const std::vector<Seg>& b);
// Whether the tiles' bounding boxes meet (a quick test before seg_overlap).
bool boxes_meet(const Tile& a, const Tile& b);

// A layout seen from one rank of a communicator: every rank's tiles (the geometry; the storage
// fields are this rank's own only), rows x cols.
struct ResolvedLayout {
  index_t rows = 0, cols = 0;
  std::vector<RankTiles> ranks;
  // This rank's storage problem (lld too small, ...), empty when none; the geometry's problems
  // are the same on every rank. Combine with Comm::first_error before acting.
  std::string error;
};

// Collective: every rank's tiles of `l` on `comm` (block lists are gathered), checked: sizes,
// grids, blocks that overlap or leave gaps, leading dimensions (the memory is the plan's to
// check: the geometry is the same in either). `name` ("A")
// goes into the messages, which name the fix.
ResolvedLayout resolve(const Layout& l, const Comm& comm, const std::string& name);
// The layout of X^T (or X^H): rows and columns swapped, storage order flipped, nothing moved.
ResolvedLayout transposed(const ResolvedLayout& l);
// An algorithm's pieces (every rank's, by rank) as a layout: each piece column-major, tight.
ResolvedLayout from_pieces(index_t rows, index_t cols, const std::vector<Piece>& pieces);
Tile piece_tile(const Piece& p);

// Elements from a rank's base pointer that its tiles reach (padding between them included): the
// storage its buffer must have.
index_t local_extent(const RankTiles& tiles);
// Elements that a and b hold in common (the volume a rank already has of another's part).
index_t overlap_elements(const RankTiles& a, const RankTiles& b);
// Elements per pair: held[p][r] = what rank p holds in `have` of rank r's part in `want`,
// computed by each rank for its own row and gathered (collective).
std::vector<std::vector<index_t>> held_matrix(const ResolvedLayout& have, const ResolvedLayout& want,
                                              const Comm& comm);
// The assignment of parts to ranks holding the most of them (COSTA's relabeling): perm[r] = the
// rank that takes part r, maximising sum_r held[perm[r]][r] (Hungarian method, O(P^3)); among
// the best, the one keeping most ranks on their own part, so matching layouts give the identity.
std::vector<int> best_assignment(const std::vector<std::vector<index_t>>& held);

// Where this rank's part `piece` of an algorithm's layout already lies in `mine` exactly, as one
// column-major array (element offset of its first element, leading dimension): the data can be
// used in place. None: it must be copied.
struct InPlace {
  index_t offset = 0, ld = 1;
};
std::optional<InPlace> in_place(const RankTiles& mine, const Tile& piece);

}  // namespace distmm
