#pragma once
#include <algorithm>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "algorithm.hpp"
#include "../runtime/rate_balancer.hpp"

namespace distmm {
// P = m * 7^k with m in 1..6 (the rank counts CAPS takes): {m, k}; none otherwise.
std::optional<std::pair<int, int>> caps_factors(int P);
// Peak words per rank of a CAPS step sequence (caps.cpp): the automatic choice and the report.
double caps_peak_words(GemmShape s, int P, const CapsSteps& steps, const Engine& e, Dtype dt);
// The CAPS schedule (caps.cpp) on P = m * 7^k ranks, k the BFS steps (any m with dealt steps):
// the plan's choice of steps and formula (caps_plan.cpp, make_caps) built.
std::unique_ptr<DistAlgorithm> make_caps_schedule(const Comm& world, GemmShape s, const CapsSteps& steps,
                                                  const BilinearFormula& f, bool device_resident);

// The order in which the dealt steps' subproblems go out: round s gives
// subproblem j0 + i to owners[i]. Rounds 0 and 1 give one to every rank; where balanced, the rest
// are shared out by the rate balancer (balance: rate_shares, mpi/runtime/rate_balancer.hpp, from
// the round-0 products' times, gathered once), and rank r's n_r spread evenly over the next max n
// rounds, so that a rank on a slower core skips rounds instead of holding every round back.
// Every rank computes the same plan from the same gathered times.
struct DealtStep {
  index_t j0;
  std::vector<int> owners;
};
struct DealtPlan {
  // J subproblems over P ranks. Balanced: rounds 0 and 1 (the rest once balance() has the
  // times); else round-robin in whole rounds, the last J mod P left (split over all ranks).
  DealtPlan(index_t J_, int P_, bool balanced) : J(J_), P(P_) { while (balanced ? steps.size() < 2 : J - next >= P) add(); }
  std::vector<DealtStep> steps;
  index_t next = 0, J = 0;
  int P = 1;
  std::vector<index_t> n;  // from round 2 on, each rank's share; empty: every rank in every round
  void add() {             // the next round
    const index_t k = index_t(steps.size()) - 2, most = n.empty() ? 1 : *std::max_element(n.begin(), n.end());
    steps.push_back({next, {}});
    for (int r = 0; r < P && next < J; ++r)
      if (n.empty() || (k + 1) * n[std::size_t(r)] / most > k * n[std::size_t(r)] / most)
        steps.back().owners.push_back(r), ++next;
  }
  // n for what is not dealt yet
  void balance(const std::vector<double>& sec_per_product) { n = rate_shares(J - next, sec_per_product); }
  // balanced: rounds up to t (while subproblems are left)
  void extend_to(std::size_t t) { while (!n.empty() && steps.size() <= t && next < J) add(); }
  int index_of(std::size_t t, int r) const {  // r's place in round t (-1: none)
    const auto& o = steps[t].owners;
    const auto it = std::find(o.begin(), o.end(), r);
    return it == o.end() ? -1 : int(it - o.begin());
  }
};
}  // namespace distmm
