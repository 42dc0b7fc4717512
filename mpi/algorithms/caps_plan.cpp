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
    if (c == CapsStep::dfs) {
      live += qa + qb + qc;
    } else {
      // seven sums of each, their exchange buffers, the subproblem, and seven products back
      live += 7 * (qa + qb) + 7 * (qa + qb) + 7 * qc + 7 * qc;
      Pc /= 7;
    }
    m /= 2, n /= 2, k /= 2;
    peak = std::max(peak, live);
  }
  if (const int dealt = static_cast<int>(std::count(steps.begin(), steps.end(), CapsStep::dealt)); dealt > 0) {
    // The dealt steps: the sums' and partial products' stacks (a third of the stage's blocks),
    // two rounds of sent chunks, subproblem operands, products and returned chunks, and the
    // engine's workspace for one subproblem.
    const double f = double(index_t(1) << dealt), lm = m / f, ln = n / f, lk = k / f;
    live += (m * k + k * n + m * n) / Pc / 3 + 4 * (lm * lk + lk * ln) + 4 * lm * ln;
    const double ws = double(e.workspace_bytes(index_t(lm), index_t(ln), index_t(lk), dt)) / size_of(dt);
    return std::max(peak, live + ws);
  }
  double leaf_extra = Pc > 1 ? m * k : 0;  // gathered A at a shared leaf
  double ws = double(e.workspace_bytes(index_t(m), index_t(std::ceil(n / Pc)), index_t(k), dt)) /
              size_of(dt);
  return std::max(peak, live + leaf_extra + ws);
}

std::optional<std::pair<int, int>> caps_factors(int P) {
  int m = P, k = 0;
  while (m > 0 && m % 7 == 0) m /= 7, ++k;
  if (m < 1 || m > 6) return std::nullopt;
  return std::make_pair(m, k);
}

std::unique_ptr<DistAlgorithm> make_caps(const Comm& world, GemmShape s, const AlgoOptions& o) {
  const Engine* engine = o.engine;
  const Dtype dt = o.dtype;
  const int P = world.size();
  const auto factors = caps_factors(P);
  int v7 = 0;  // BFS steps this rank count allows above dealt steps (7^v7 divides P)
  for (int q = P; q % 7 == 0; q /= 7) ++v7;
  const index_t smallest = std::min({s.m, s.n, s.k});
  auto no_fit = [&] {
    int lo = 1, hi = 1;
    for (int p = 1; p <= 6 * 7 * 7 * 7 * 7; ++p) {
      if (!caps_factors(p)) continue;
      if (p < P) lo = p;
      if (p > P) { hi = p; break; }
    }
    return UsageError("caps needs P = m * 7^k ranks with m in 1..6 for BFS and DFS steps alone, got " +
                      std::to_string(P) + ": use " + std::to_string(lo) + " or " + std::to_string(hi) +
                      " ranks, dealt steps (--caps-steps XXX), or --algo summa");
  };
  std::vector<CapsSteps> sequences;
  if (o.caps_steps) {
    const CapsSteps& steps = *o.caps_steps;
    const int b = int(std::count(steps.begin(), steps.end(), CapsStep::bfs));
    const std::string text = to_string(steps);
    const std::size_t first_x = text.find('X');
    const bool dealt = first_x != std::string::npos;
    if (dealt && text.find_first_not_of('X', first_x) != std::string::npos)
      throw UsageError("--caps-steps '" + text + "': dealt steps (X) must come last, e.g. BXX");
    if (dealt && std::count(steps.begin(), steps.end(), CapsStep::dealt) > 6)
      throw UsageError("--caps-steps '" + text + "': at most 6 dealt steps (7^6 = 117649 subproblems)");
    if (dealt && b > v7)
      throw UsageError("--caps-steps '" + text + "' has " + std::to_string(b) + " BFS steps but 7^" +
                       std::to_string(b) + " does not divide " + std::to_string(P) + " ranks: use at most " +
                       std::to_string(v7));
    if (!dealt && !factors) throw no_fit();
    if (!dealt && b != factors->second)
      throw UsageError("--caps-steps '" + text + "' has " + std::to_string(b) + " BFS steps but " +
                       std::to_string(P) + " ranks = " + std::to_string(factors->first) + " * 7^" +
                       std::to_string(factors->second) + " need exactly " + std::to_string(factors->second) +
                       " (or end with dealt steps, X)");
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
    const int k7 = factors ? factors->second : 0;
    auto with_dfs = [&](int top, int below) {
      CapsSteps st(top, CapsStep::dfs);
      st.insert(st.end(), k7, CapsStep::bfs);
      st.insert(st.end(), below, CapsStep::dfs);
      return st;
    };
    std::vector<CapsSteps> dealt;
    if (!o.device_resident)
      for (int b : {0, v7}) {
        for (int L = 1; L <= 4; ++L) {
          if ((smallest >> (b + L)) < 64) break;
          CapsSteps st(b, CapsStep::bfs);
          st.insert(st.end(), L, CapsStep::dealt);
          if (std::find(dealt.begin(), dealt.end(), st) == dealt.end()) dealt.push_back(st);
        }
      }
    // Every rank must keep the same candidates (each one builds communicators), and an engine's
    // workspace estimate may rest on this process's own timing (a CPU engine's automatic
    // levels): the estimates of every sequence weighed, their largest over the ranks decide.
    constexpr int kTop = 8, kBelow = 3;
    std::vector<double> need(kTop * kBelow + dealt.size(), 0.0);
    if (engine) {
      if (factors)
        for (int t = 0; t < kTop; ++t)
          for (int b = 0; b < kBelow; ++b)
            need[std::size_t(t * kBelow + b)] = caps_peak_words(s, P, with_dfs(t, b), *engine, dt) * double(size_of(dt));
      for (std::size_t i = 0; i < dealt.size(); ++i)
        need[kTop * kBelow + i] = caps_peak_words(s, P, dealt[i], *engine, dt) * double(size_of(dt));
    }
    MPI_Allreduce(MPI_IN_PLACE, need.data(), int(need.size()), MPI_DOUBLE, MPI_MAX, world.get());
    auto fits = [&](int top, int below) { return need[std::size_t(top * kBelow + below)] <= limit; };
    if (factors) {
      int d = 0;
      for (; d < kTop - 1; ++d)
        if (fits(d, 0)) break;
      for (int extra = 0; extra < kBelow; ++extra) {
        if (extra > 0 && (smallest >> (d + extra + k7)) < 64) continue;  // leaves of at least 64
        sequences.push_back(with_dfs(d + extra, 0));
        if (extra > 0 && k7 > 0 && fits(d, extra)) sequences.push_back(with_dfs(d, extra));
      }
    }
    for (std::size_t i = 0; i < dealt.size(); ++i)
      if (need[kTop * kBelow + i] <= limit) sequences.push_back(dealt[i]);
    if (sequences.empty()) {  // nothing fits: the leanest, whose memory error names the fix
      if (factors) sequences.push_back(with_dfs(kTop - 1, 0));
      else if (!dealt.empty()) sequences.push_back(dealt.front());
      else throw no_fit();
    }
  }
  const std::vector<const BilinearFormula*> formulas =
      o.formula ? std::vector{o.formula} : std::vector{&kStrassenFormula, &kWinogradFormula};
  if (sequences.size() == 1 && formulas.size() == 1)
    return make_caps_schedule(world, s, sequences[0], *formulas[0], o.device_resident);

  // The candidates' predicted times (cost_model.hpp) from their exact counts.
  const MachineModel mm = machine_model_for(world, o.device_resident, engine ? engine->name() : "", dt, double(s.m), double(s.n), double(s.k));
  const double elem = double(size_of(dt));
  std::vector<std::unique_ptr<DistAlgorithm>> cands;
  std::vector<std::string> keys;  // "DB strassen": the choice among CAPS variants
  std::vector<double> t, words;
  for (const CapsSteps& seq : sequences)
    for (const BilinearFormula* f : formulas) {
      cands.push_back(make_caps_schedule(world, s, seq, *f, o.device_resident));
      keys.push_back((seq.empty() ? std::string("-") : to_string(seq)) + " " + f->name);
      const CommEstimate e = cands.back()->analytic();
      t.push_back(predicted_seconds(mm, e, elem));
      words.push_back(e.words_max);
    }
  const std::size_t best = words_first_choice(t, words);
  std::string why = "caps steps and formula by the cost model (of those that fit in memory):";
  char buf[128];
  for (std::size_t c = 0; c < cands.size(); ++c) {
    std::snprintf(buf, sizeof buf, " %s%s %.3g s%s", c == best ? "*" : "", keys[c].c_str(), t[c],
                  c + 1 < cands.size() ? "," : "");
    why += buf;
  }
  cands[best]->set_selection(why);
  return std::move(cands[best]);
}

}  // namespace distmm
