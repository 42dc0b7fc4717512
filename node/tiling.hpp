// Shared pieces of the cache-aware tilings of seed 004 (mmra.cpp, tiling_references.cpp):
// cache capacities in q x q blocks, block ranges, and the per-thread BLAS call on blocks.
#pragma once
#include <string>

#include "engine.hpp"
#include "operand.hpp"

namespace distmm {

struct TilingCaches {
  double shared_blocks = 0;       // C_S: q x q blocks that fit the shared cache
  double distributed_blocks = 0;  // C_D: q x q blocks that fit one core's cache
};

// C_S and C_D for blocks of q x q elements; `lru` keeps half of each cache as the LRU buffer
// (the paper's "-LRU" versions). The shared size comes from EngineOptions::cache_bytes when set.
TilingCaches tiling_caches(const EngineOptions& o, std::size_t elem, bool lru);

// Largest integer x with 1 + x + x^2 <= capacity (at least 1): the side of the square block of C
// that fits beside one row of B and one element of A (the Maximum Reuse Algorithm).
int max_reuse_side(double capacity);

// Rows (or columns) [begin, end) of block b when n elements are cut into blocks of q.
struct BlockRange {
  index_t begin, end;
  index_t size() const { return end - begin; }
};
inline BlockRange block_range(index_t b0, index_t b1, index_t q, index_t n) {
  return {std::min(b0 * q, n), std::min(b1 * q, n)};
}
inline index_t blocks_of(index_t n, index_t q) { return (n + q - 1) / q; }

// Part i of `parts` near-equal parts of r, in elements. Seed 004 assumes that the blocks of every
// core divide the matrix evenly; where a group of blocks is ragged (the matrix edge), cutting it
// by elements instead of by whole blocks keeps every core equally busy, and no part is larger
// than the block it replaces, so the cache bounds hold.
inline BlockRange share(BlockRange r, index_t parts, index_t i) {
  return {r.begin + r.size() * i / parts, r.begin + r.size() * (i + 1) / parts};
}

// C[r, c] += alpha op(A)[r, k] op(B)[k, c] with single-threaded BLAS (called from a thread).
template <class T>
void block_gemm(const Operand<T>& A, const Operand<T>& B, const Target<T>& C, BlockRange r,
                BlockRange c, BlockRange k, T alpha);

// p threads as a pr x pc grid, pr <= pc, as square as p allows (seed 004 assumes sqrt(p) integer;
// its GPU section generalises to p x q).
std::pair<int, int> core_grid(int p);

}  // namespace distmm
