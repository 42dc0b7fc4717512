// One rate balancer for every schedule that deals work by measured speed (CAPS's dealt rounds,
// the drop-in's k-split): given each rank's measured seconds per unit of work, move work items
// so that the ranks finish together. Equal work does not take equal time: on a shared host the
// same single-threaded product runs at unequal speeds on different cores (docs/performance.md,
// the drop-in's k-split), and a schedule ends with its slowest rank. It knows nothing of the schedules: a schedule says what
// each rank still has to do and which items it could give; the balancer predicts the finishes
// and chooses the moves. Every rank that calls it with the same numbers gets the same answer, so
// the ranks agree on a plan without another message.
#pragma once
#include <mpi.h>

#include <climits>
#include <cstddef>
#include <vector>

#include "../../src/core/settings.hpp"
#include "../../src/core/types.hpp"
#include "comm.hpp"

namespace distmm {

// A piece of work a rank could give: what it costs whoever computes it (units of work), the
// words a thief receives for it, and one rank that may not take it (-1: none).
struct RateItem {
  double work = 0, words = 0;
  int barred = -1;
};

// A rank as the balancer sees it. Its predicted finish (rate_finish): `ready`, then `work` at its
// rate, then `words` (of items it took earlier) at the price per word.
struct RateRank {
  double sec_per_work = 0;     // measured; 0: unknown, and then it neither gives nor takes
  double ready = 0;            // when it starts on `work`
  double work = 0, words = 0;  // what it still has to do, its own items included
  int taken = 0;               // items it took earlier (they count against the cap)
  bool may_take = true;
  std::vector<RateItem> items;  // what it may give, in the order it gives them
};

// The constraints: the thief's price of a word moved; at most max_per_thief items taken by one
// rank (earlier ones included); a move must bring the pair's later finish down by `margin` of the
// item's time on the victim, so that noise in the rates does not move items back and forth.
struct RateRules {
  double sec_per_word = 0;
  int max_per_thief = INT_MAX;
  double margin = 0.1;
};

// Item `item` of rank `victim`'s list, computed by `thief`.
struct RateMove {
  int victim;
  std::size_t item;
  int thief;
};

double rate_finish(const RateRank& r, double sec_per_word);

// Greedily, while it pays: the rank predicted last gives its next item to the rank that would
// then finish first (not the victim, not the item's barred rank, a known rate, may_take, under
// the cap). Stops when the last rank has nothing left to give. `finish` (optional) gets every
// rank's finish as predicted after the moves.
std::vector<RateMove> rate_balance(const std::vector<RateRank>& ranks, const RateRules& rules,
                                   std::vector<double>* finish = nullptr);

// `items` equal items (one unit of work each) dealt round-robin over the ranks (the first
// items mod P get one more), then balanced by rate_balance (no price per word, no cap): rank r's
// count. Unknown rates (0) keep their round-robin share.
std::vector<index_t> rate_shares(index_t items, const std::vector<double>& sec_per_item);

// The ranks with a known rate whose predicted finish is at or after the median of those ranks'
// finishes (the upper median): those still worth a second look.
std::vector<char> rate_late(const std::vector<double>& finish, const std::vector<double>& sec_per_work);

// The test hook (DISTMM_*_SKEW=R:F): rank R reports F times what it measured, so that a test
// sees work move on an idle machine.
inline double skewed(const Skew& s, int rank, double measured) {
  return rank == s.rank ? measured * s.factor : measured;
}

// Every rank's report of `width` doubles, all-gathered without blocking (one small message per
// rank, not counted with the schedule's words). Not moved or copied while in flight.
class RateGather {
 public:
  RateGather(int ranks, int width)
      : mine(static_cast<std::size_t>(width), 0.0), all(static_cast<std::size_t>(ranks * width), 0.0) {}
  void post(const Comm& comm, std::vector<double> report);  // once; report.size() == width
  bool posted() const { return posted_; }
  bool ready();  // arrived (not blocking; false before post)
  void wait();   // blocks until it arrived (returns at once when never posted)
  std::vector<double> mine, all;  // this rank's report, everyone's in rank order (zeros before)

 private:
  MPI_Request req_ = MPI_REQUEST_NULL;
  bool posted_ = false;
};

}  // namespace distmm
