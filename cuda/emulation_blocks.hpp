// The INT8 emulation's workspace and blocks (int8_emulation.cu): the bytes a block of C takes
// for N slices, and the blocks a product runs in under a memory budget. Plain C++ (host only),
// so that the choice is tested without a GPU (tests/cuda/emulation_blocks_test.cpp).
#pragma once
#include <algorithm>
#include <cstddef>
#include <optional>

#include "../src/core/types.hpp"
#include "ozaki_arith.hpp"

namespace distmm::emulation {

// int32 sums of k products of int8 residues (|r| <= 128) are exact while k * 2^14 < 2^31.
constexpr index_t kMaxChunk = 131056;  // a multiple of 16 below 2^17

inline index_t round_up(index_t x, index_t to) { return (x + to - 1) / to * to; }
inline std::size_t align256(std::size_t x) { return (x + 255) / 256 * 256; }
// k of one chunk, padded for the INT8 products
inline index_t padded_k(index_t kk) { return round_up(std::min(kk, kMaxChunk), 16); }

struct Sizes {
  index_t Kp, mb, OpA, nb, OpB;
  std::size_t slices_a, slices_b, c32, residues, sums_a, sums_b, total;
  // room for Winograd levels in the residues: 1, one modulus' sums and seven quarter products;
  // 2, also the second level's sums (of one first-level operand at a time) and 49 sixteenths
  int levels;
  // the first level's sums kept for this many moduli (1; N: with_sums_of_every_modulus)
  int sums_slots = 1;
};

// The workspace of row blocks of m rows and panels of nb columns, at k = kk (one chunk of it)
// and N slices. (a_held: op(A)'s slices live in the held buffer, not in the workspace; levels:
// with room for that many Winograd levels in the residues)
inline Sizes sizes_for(index_t m, index_t kk, bool cplx, int N, index_t nb, bool a_held = false, int levels = 0) {
  Sizes z{};
  z.levels = levels;
  const bool level = levels > 0;
  const int parts = cplx ? 2 : 1;
  z.Kp = padded_k(kk);
  z.mb = m;
  z.OpA = round_up(parts * m, 16);
  z.nb = nb;
  z.OpB = round_up(parts * nb, 16);
  z.slices_a = a_held ? 0 : align256(std::size_t(N) * z.Kp * z.OpA);
  z.slices_b = align256(std::size_t(N) * z.Kp * z.OpB);
  z.c32 = align256(std::size_t(z.OpA) * z.OpB * sizeof(int));
  if (level) z.c32 = std::max(z.c32, 7 * align256(std::size_t(z.OpA / 2) * (z.OpB / 2) * sizeof(int)));
  if (levels > 1) z.c32 = std::max(z.c32, 49 * align256(std::size_t(z.OpA / 4) * (z.OpB / 4) * sizeof(int)));
  z.residues = align256(std::size_t(N) * parts * m * nb);
  // (the second level's sums of one first-level operand, Kp/2 x Op/2 in place at ld Kp, after the first's)
  z.sums_a = level ? align256(std::size_t(z.Kp) * z.OpA) + (levels > 1 ? align256(std::size_t(z.Kp) * z.OpA / 2) : 0) : 0;
  z.sums_b = level ? align256(std::size_t(z.Kp) * z.OpB) + (levels > 1 ? align256(std::size_t(z.Kp) * z.OpB / 2) : 0) : 0;
  z.total = z.slices_a + z.slices_b + 2 * z.c32 + z.residues + z.sums_a + z.sums_b;
  return z;
}

// Room for the first level's sums of every modulus (made beside the slices, each slice read once,
// instead of one modulus' at a time from its slices): N - 1 more per operand, each at the slices'
// size. The emulation takes it only where the budget has room after the blocks are chosen.
inline Sizes with_sums_of_every_modulus(Sizes z, int N) {
  if (z.levels == 0 || N <= z.sums_slots) return z;
  const std::size_t a = align256(std::size_t(z.Kp) * z.OpA), b = align256(std::size_t(z.Kp) * z.OpB);
  const std::size_t more = std::size_t(N - z.sums_slots);
  z.sums_a += more * a, z.sums_b += more * b, z.total += more * (a + b);
  z.sums_slots = N;
  return z;
}

// The blocks of an m x n product (k = kq, N slices) inside `budget` bytes: all of C if it fits,
// else column panels, and row blocks where op(A)'s slices alone do not fit (f64 49152 on an
// 80 GB GPU: the operands leave about 20 GB, 14 slices of A take 34) or where smaller blocks
// take a Winograd level; panels no narrower than a quarter of the block's rows, so that each
// INT8 product stays large; nullopt where not even 16 x 16 fits. (a_held: op(A)'s slices in the
// held buffer, so whole rows only; level: with room for the Winograd levels in the residues
// that the blocks take, ozaki::residue_levels under `mode`: two, else one, as the budget allows.)
// Per row block height, the widest panels that fit (narrower where only they leave room for a
// level); the first such blocks unless a later height's take more levels (then the first of
// those with the most): a level saves an eighth of the INT8 work, another row block costs one
// more pass of op(B)'s slices, small beside products of 16384 rows or more (f64 49152 on an
// H200: blocks of 49152 x 12288 took no level, 24576 x 24576 one, 2.79 -> 2.73 s;
// docs/performance.md, "Session 35").
inline std::optional<Sizes> fit_blocks(index_t m, index_t n, index_t kq, bool cplx, int N, std::size_t budget,
                                       ozaki::LevelMode mode, bool a_held = false, bool level = false) {
  const int parts = cplx ? 2 : 1;
  std::optional<Sizes> best;
  int best_levels = -1;
  // (the levels the whole product would take: no blocks can take more)
  const int most = level ? ozaki::residue_levels(mode, parts * m, parts * n, padded_k(kq), cplx) : 0;
  for (index_t mb = m;; mb = round_up(mb / 2, 16)) {
    if (a_held && mb < m) break;
    const index_t least_nb = mb <= 256 ? 16 : std::min<index_t>(n, std::max<index_t>(mb / 4, 256));
    for (index_t nb = n;; nb = round_up(nb / 2, 16)) {
      Sizes zz = sizes_for(mb, kq, cplx, N, nb, a_held);
      if (zz.total <= budget) {
        int wanted = 0;  // (the most that a block takes, the last ones included)
        for (index_t r : {mb, m - (m - 1) / mb * mb})
          for (index_t w : {nb, n - (n - 1) / nb * nb})
            if (level) wanted = std::max(wanted, ozaki::residue_levels(mode, parts * r, parts * w, zz.Kp, cplx));
        int lv = wanted;
        for (; lv > 0; --lv)
          if (const Sizes zl = sizes_for(mb, kq, cplx, N, nb, a_held, lv); zl.total <= budget) {
            zz = zl;
            break;
          }
        if (lv > best_levels) best = zz, best_levels = lv;
        if (lv == wanted) break;  // (narrower panels of this height: no more levels; else room for one)
      }
      if (nb <= 16 || round_up(nb / 2, 16) < least_nb) break;
    }
    // (no more levels to find: the most the product takes, or blocks below kLevelFrom)
    if (best_levels >= most || (best && parts * mb < ozaki::kLevelFrom) || mb <= 16) break;
  }
  return best;
}

}  // namespace distmm::emulation
