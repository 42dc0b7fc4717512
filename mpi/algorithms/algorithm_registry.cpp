#include <algorithm>
#include <functional>
#include <map>

#include "algorithms.hpp"
#include "caps.hpp"
#include "cost_model.hpp"
#include "../runtime/grid.hpp"
#include "../../src/core/system.hpp"

namespace distmm {
namespace {

using Factory = std::unique_ptr<DistAlgorithm> (*)(const Comm&, GemmShape, const AlgoOptions&);

struct Entry {
  Algorithm algo;
  const char* name;
  Factory make;  // null for automatic
};
constexpr Entry kAlgorithms[] = {
    {Algorithm::automatic, "auto", nullptr}, {Algorithm::summa, "summa", make_summa},
    {Algorithm::cannon, "cannon", make_cannon}, {Algorithm::dns, "dns", make_dns},
    {Algorithm::scalapack, "scalapack", make_scalapack}, {Algorithm::caps, "caps", make_caps},
    {Algorithm::cuboid, "cuboid", make_cuboid},
};

// The most CAPS steps of a sequence given by the user (--caps-steps): each step, B, D or X,
// multiplies the leaf products by 7, so each step past the limit multiplies a run's time by 7,
// even with leaves of one element
// (docs/performance.md, "Measurements behind the code": kMostCapsSteps).
constexpr int kMostCapsSteps = 8;

// An explicit CAPS step sequence that the shape can use: each step halves m, n and k (padded
// with zeros to multiples of 2^steps), and once every dimension is down to one element a further
// step splits only padding: 7 times the work for nothing. (Steps below one element in some
// dimensions but not all are useful: 600 x 3 x 1 with one step halves m.) Refused with the
// reason and the most steps allowed; the memory is checked with the plan.
void check_caps_steps(GemmShape s, const CapsSteps& steps) {
  const index_t largest = std::max({s.m, s.n, s.k});
  int useful = 0;  // ceil(log2(largest)): the steps after which some block is still wider than 1
  while ((index_t(1) << useful) < largest) ++useful;
  const int most = std::min(useful, kMostCapsSteps);
  const int given = static_cast<int>(steps.size());
  if (given <= most) return;
  const std::string head = "--caps-steps '" + to_string(steps) + "' has " + std::to_string(given) + " steps, ";
  const std::string fix = ": use at most " + std::to_string(most) + " (or --caps-steps auto)";
  if (useful < kMostCapsSteps)
    throw UsageError(head + "but each halves m, n and k, and after " + std::to_string(useful) + " every block of " +
                     std::to_string(s.m) + " x " + std::to_string(s.n) + " x " + std::to_string(s.k) +
                     " is one element: a further step splits only zero padding" + fix);
  throw UsageError(head + "and each multiplies the leaf products by 7: more than 7^" + std::to_string(kMostCapsSteps) +
                   " of them would not finish in reasonable time" + fix);
}

}  // namespace

const char* to_string(Algorithm a) {
  for (const Entry& e : kAlgorithms)
    if (e.algo == a) return e.name;
  return "?";
}

std::optional<Algorithm> parse_algorithm(std::string_view name) {
  for (const Entry& e : kAlgorithms)
    if (name == e.name) return e.algo;
  return std::nullopt;
}

std::vector<std::string> algorithm_names() {
  std::vector<std::string> names;
  for (const Entry& e : kAlgorithms) names.push_back(e.name);
  return names;
}

std::string to_string(const CapsSteps& steps) {
  std::string s;
  for (CapsStep c : steps) s += static_cast<char>(c);
  return s;
}

std::optional<CapsSteps> parse_caps_steps(std::string_view text) {
  CapsSteps steps;
  for (char c : text) {
    if (c != 'B' && c != 'D' && c != 'X') return std::nullopt;
    steps.push_back(static_cast<CapsStep>(c));
  }
  return steps;
}

double plan_memory_limit(const Comm& world, GemmShape s, const AlgoOptions& o) {
  if (o.device_resident && o.device_limit > 0)
    return double(o.device_limit) + (double(s.m) * s.k + double(s.k) * s.n + double(s.m) * s.n) *
                                        double(size_of(o.dtype)) / std::max(world.size(), 1);
  // The least over the ranks: each rank's own figure (MemAvailable, or the drop-in's per-rank
  // limit) differs, and ranks that planned with different limits would build different plans.
  const double mine = double(o.mem_limit ? o.mem_limit : available_memory_bytes() / std::max(1, node_local_size(world)));
  return -world.allreduce_max_uncounted(-mine);
}

std::unique_ptr<DistAlgorithm> make_algorithm(Algorithm algo, const Comm& world, GemmShape shape,
                                              const AlgoOptions& opts) {
  if (algo == Algorithm::automatic && opts.device_resident) return make_auto_device(world, shape, opts);
  if (algo == Algorithm::automatic) {
    // Of the classical algorithms that fit this rank count, the one with the least predicted
    // time for the busiest rank: flops over the rank's rate, bytes over bandwidth, messages
    // times latency (cost_model.hpp; the words and messages are each algorithm's exact counts).
    const MachineModel mm = machine_model(world);
    const double elem = double(size_of(opts.dtype));
    const int P = world.size();
    std::vector<std::unique_ptr<DistAlgorithm>> candidates;
    candidates.push_back(make_summa(world, shape, opts));
    candidates.push_back(make_cuboid(world, shape, opts));
    if (P > 1 && exact_root(P, 2)) candidates.push_back(make_cannon(world, shape, opts));
    if (P > 1 && exact_root(P, 3)) candidates.push_back(make_dns(world, shape, opts));
    // CAPS where the rank count is m 7^k (k >= 1) and the caller accepts Strassen's error growth:
    // 1/8 fewer multiplications per step, paid in additions and exchanges that the model prices.
    // Only with a measured model: CAPS's gain is a few percent of the multiply time and its cost
    // is the machine's memory bandwidth, which the defaults cannot know, and with them the model
    // predicted CAPS faster where it ran slower (docs/performance.md, "Measurements behind the
    // code": CAPS in --algo auto).
    // On other rank counts (and below the BFS steps) CAPS deals the subproblems of its last
    // levels round-robin (host runs): any P >= 2 with room for one level of leaves >= 64.
    const auto f = caps_factors(P);
    const index_t smallest = std::min({shape.m, shape.n, shape.k});
    const bool caps_fits = opts.strassen_like_ok && ((f && f->second >= 1 && smallest >> f->second >= 64) ||
                                                     (P >= 2 && !opts.device_resident && smallest >= 128));
    if (caps_fits && mm.measured) candidates.push_back(make_caps(world, shape, opts));
    std::vector<double> t, words;
    for (const auto& a : candidates) {
      const CommEstimate e = a->analytic();
      t.push_back(predicted_seconds(mm, e, elem));
      words.push_back(e.words_max);
    }
    const std::size_t best = words_first_choice(t, words);
    std::string why = "auto: " + candidates[best]->name() + " (" + candidates[best]->layout() +
                      "): of those predicted within 10% of the fastest, the fastest of those within 5% of the fewest words:";
    char buf[192];
    for (std::size_t a = 0; a < candidates.size(); ++a) {
      std::snprintf(buf, sizeof buf, " %s %.3g s %.3g words%s", candidates[a]->name().c_str(), t[a],
                    words[a], a + 1 < candidates.size() ? "," : "");
      why += buf;
    }
    std::snprintf(buf, sizeof buf, "; model %.3g GFLOP/s (slowest rank %.3g), %.3g GB/s, %.3g us, %.3g GB/s memory per rank, from ",
                  mm.flops_per_s / 1e9, mm.static_rate() / 1e9, mm.bytes_per_s / 1e9, mm.latency_s * 1e6,
                  mm.memory_bytes_per_s / 1e9);
    why += buf + mm.source;
    if (caps_fits && !mm.measured) why += "; caps not considered without a measured model (run distmm calibrate)";
    if (!candidates[best]->selection().empty()) why += "; " + candidates[best]->selection();
    auto chosen = std::move(candidates[best]);
    chosen->set_selection(why);
    return chosen;
  }
  if (algo == Algorithm::caps && opts.caps_steps) check_caps_steps(shape, *opts.caps_steps);
  for (const Entry& e : kAlgorithms)
    if (e.algo == algo) return e.make(world, shape, opts);
  throw UsageError("unknown algorithm");
}

void check_named_settings(const Settings& s) {
  setting::choice("DISTMM_ENGINE", s.engine, engine_names());
  std::vector<std::string> answerable;  // the drop-in cannot answer P?GEMM with ScaLAPACK itself
  for (const std::string& a : algorithm_names())
    if (a != "scalapack") answerable.push_back(a);
  setting::choice("DISTMM_ALGO", s.algo, answerable);
}

Settings checked_settings() {
  Settings s = settings();
  check_named_settings(s);
  return s;
}

}  // namespace distmm
