// CAPS's plan (caps.cpp holds its schedule, caps.hpp the dealt rounds' owners): the rank counts
// it takes, its memory per rank, the choice of steps and formula within memory by the cost model.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "algorithms.hpp"
#include "caps.hpp"
#include "cost_model.hpp"

namespace distmm {

double caps_peak_words(GemmShape s, int P, const CapsSteps& steps, const Engine& e, Dtype dt) {
  const int S = static_cast<int>(steps.size());
  auto pad = [&](index_t x) { return double(((x + (index_t(1) << S) - 1) >> S) << S); };
  double m = pad(s.m), n = pad(s.n), k = pad(s.k);
  // Inputs and output in the user's layout and in the padded buffers, then per step the largest
  // live set (a ceiling: chunk widths rounded up).
  double live = 2 * (m * k + k * n + m * n) / P, peak = live, Pc = P;
  for (CapsStep c : steps) {
    if (c == CapsStep::dealt) break;
    double qa = m * k / 4 / Pc, qb = k * n / 4 / Pc, qc = m * n / 4 / Pc;
    // DFS: one product's sums and product; BFS: seven sums of each, their exchange buffers, the
    // subproblem, and seven products back
    live += c == CapsStep::dfs ? qa + qb + qc : 7 * (qa + qb) + 7 * (qa + qb) + 7 * qc + 7 * qc;
    if (c == CapsStep::bfs) Pc /= 7;
    m /= 2, n /= 2, k /= 2;
    peak = std::max(peak, live);
  }
  // Below them, the dealt steps' sums' and partial products' stacks (a third of the stage's
  // blocks), two rounds of sent chunks, subproblem operands, products and returned chunks, or at a
  // shared leaf the gathered A; and the engine's workspace for one subproblem (or leaf product).
  const int dealt = static_cast<int>(std::count(steps.begin(), steps.end(), CapsStep::dealt));
  const double f = double(index_t(1) << dealt), lm = m / f, ln = n / f, lk = k / f;
  const double extra = dealt > 0 ? (m * k + k * n + m * n) / Pc / 3 + 4 * (lm * lk + lk * ln) + 4 * lm * ln : Pc > 1 ? m * k : 0;
  const index_t wn = index_t(dealt > 0 ? ln : std::ceil(n / Pc));
  return std::max(peak, live + extra + double(e.workspace_bytes(index_t(lm), wn, index_t(lk), dt)) / size_of(dt));
}

std::optional<std::pair<int, int>> caps_factors(int P) {
  int m = P, k = 0;
  while (m > 0 && m % 7 == 0) m /= 7, ++k;
  return m >= 1 && m <= 6 ? std::optional(std::make_pair(m, k)) : std::nullopt;
}

std::unique_ptr<DistAlgorithm> make_caps(const Comm& world, GemmShape s, const AlgoOptions& o) {
  const int P = world.size();
  const auto factors = caps_factors(P);
  int v7 = 0;  // BFS steps this rank count allows above dealt steps (7^v7 divides P)
  for (int q = P; q % 7 == 0; q /= 7) ++v7;
  const index_t smallest = std::min({s.m, s.n, s.k});
  auto no_fit = [&] {
    int lo = P - 1, hi = P + 1;  // the nearest rank counts that fit
    while (!caps_factors(lo)) --lo;
    while (!caps_factors(hi)) ++hi;
    return UsageError("caps needs P = m * 7^k ranks with m in 1..6 for BFS and DFS steps alone, got " +
                      std::to_string(P) + ": use " + std::to_string(lo) + " or " + std::to_string(hi) +
                      " ranks, dealt steps (--caps-steps XXX), or --algo summa");
  };
  std::vector<CapsSteps> sequences;
  if (o.caps_steps) {
    const CapsSteps& steps = *o.caps_steps;
    const int b = int(std::count(steps.begin(), steps.end(), CapsStep::bfs));
    const int x = int(std::count(steps.begin(), steps.end(), CapsStep::dealt));
    const std::string text = to_string(steps);
    auto bad = [&](const std::string& why) { return UsageError("--caps-steps '" + text + "'" + why); };
    if (x > 0 && text.find_first_not_of('X', text.find('X')) != std::string::npos)
      throw bad(": dealt steps (X) must come last, e.g. BXX");
    if (x > 6) throw bad(": at most 6 dealt steps (7^6 = 117649 subproblems)");
    if (x > 0 && b > v7)
      throw bad(" has " + std::to_string(b) + " BFS steps but 7^" + std::to_string(b) + " does not divide " +
                std::to_string(P) + " ranks: use at most " + std::to_string(v7));
    if (x == 0 && !factors) throw no_fit();
    if (x == 0 && b != factors->second)
      throw bad(" has " + std::to_string(b) + " BFS steps but " + std::to_string(P) + " ranks = " +
                std::to_string(factors->first) + " * 7^" + std::to_string(factors->second) + " need exactly " +
                std::to_string(factors->second) + " (or end with dealt steps, X)");
    if (steps.size() > 20) throw UsageError("--caps-steps: at most 20 steps");
    sequences.push_back(steps);
  } else {
    // As in CAPS: all k BFS steps if memory allows, else DFS steps first (each cuts the
    // subproblem 4x before the memory-hungry BFS steps) until the estimate fits; then up to two
    // more DFS steps as candidates (each saves 1/8 of the multiplications and costs additions
    // and leaf messages), of which the cost model picks. The extra steps go either on top or
    // below the BFS steps: below, where a rank holds its subproblem alone, a DFS step is local
    // work with no message at all (docs/performance.md, "Measurements behind the code": CAPS's
    // DFS steps below). Then, on any rank count, dealt steps below none or all of
    // the BFS steps that 7^k | P allows (1 to 4 of them, leaves of at least 64), host runs only.
    const double limit = plan_memory_limit(world, s, o);  // the GPU's share when device-resident
    auto with_dfs = [&](int top, int below) {
      return *parse_caps_steps(std::string(top, 'D') + std::string(v7, 'B') + std::string(below, 'D'));
    };
    constexpr int kTop = 8, kBelow = 3;
    std::vector<CapsSteps> weighed;  // with_dfs(top, below) at top * kBelow + below, then the dealt ones
    for (int i = 0; factors && i < kTop * kBelow; ++i) weighed.push_back(with_dfs(i / kBelow, i % kBelow));
    const std::size_t first_dealt = weighed.size();
    for (int b = 0; b <= v7; b += std::max(v7, 1))  // below none or all of the BFS steps
      for (int L = 1; !o.device_resident && L <= 4 && (smallest >> (b + L)) >= 64; ++L)
        weighed.push_back(*parse_caps_steps(std::string(b, 'B') + std::string(L, 'X')));
    // Every rank must keep the same candidates (each one builds communicators), and an engine's
    // workspace estimate may rest on this process's own timing (a CPU engine's automatic
    // levels): the estimates of every sequence weighed, their largest over the ranks decide.
    std::vector<double> need(weighed.size(), 0.0);
    for (std::size_t i = 0; o.engine && i < weighed.size(); ++i)
      need[i] = caps_peak_words(s, P, weighed[i], *o.engine, o.dtype) * double(size_of(o.dtype));
    MPI_Allreduce(MPI_IN_PLACE, need.data(), int(need.size()), MPI_DOUBLE, MPI_MAX, world.get());
    auto fits = [&](std::size_t i) { return need[i] <= limit; };
    if (factors) {
      int d = 0;
      while (d < kTop - 1 && !fits(std::size_t(d * kBelow))) ++d;
      for (int extra = 0; extra < kBelow; ++extra) {
        if (extra > 0 && (smallest >> (d + extra + v7)) < 64) continue;  // leaves of at least 64
        sequences.push_back(with_dfs(d + extra, 0));
        if (extra > 0 && v7 > 0 && fits(std::size_t(d * kBelow + extra))) sequences.push_back(with_dfs(d, extra));
      }
    }
    for (std::size_t i = first_dealt; i < weighed.size(); ++i)
      if (fits(i)) sequences.push_back(weighed[i]);
    if (weighed.empty()) throw no_fit();
    if (sequences.empty())  // nothing fits: the leanest (most DFS steps, or one dealt), whose memory error names the fix
      sequences.push_back(weighed[factors ? (kTop - 1) * kBelow : 0]);
  }
  const std::vector<const BilinearFormula*> formulas =
      o.formula ? std::vector{o.formula} : std::vector{&kStrassenFormula, &kWinogradFormula};
  if (sequences.size() == 1 && formulas.size() == 1)
    return make_caps_schedule(world, s, sequences[0], *formulas[0], o.device_resident);

  // The candidates' predicted times (cost_model.hpp) from their exact counts.
  const MachineModel mm = machine_model_for(world, o.device_resident, o.engine ? o.engine->name() : "", o.dtype, double(s.m), double(s.n), double(s.k));
  std::vector<std::unique_ptr<DistAlgorithm>> cands;
  std::vector<std::string> keys;  // "DB strassen": the choice among CAPS variants
  std::vector<double> t, words;
  for (const CapsSteps& seq : sequences)
    for (const BilinearFormula* f : formulas) {
      cands.push_back(make_caps_schedule(world, s, seq, *f, o.device_resident));
      keys.push_back((seq.empty() ? std::string("-") : to_string(seq)) + " " + f->name);
      const CommEstimate e = cands.back()->analytic();
      t.push_back(predicted_seconds(mm, e, double(size_of(o.dtype))));
      words.push_back(e.words_max);
    }
  const std::size_t best = words_first_choice(t, words);
  std::string why = "caps steps and formula by the cost model (of those that fit in memory):";
  char buf[128];
  for (std::size_t c = 0; c < cands.size(); ++c) {
    std::snprintf(buf, sizeof buf, " %s%s %.3g s%s", c == best ? "*" : "", keys[c].c_str(), t[c], c + 1 < cands.size() ? "," : "");
    why += buf;
  }
  cands[best]->set_selection(why);
  return std::move(cands[best]);
}

}  // namespace distmm
