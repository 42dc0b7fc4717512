#include <functional>
#include <map>

#include "algorithms.hpp"
#include "grid.hpp"

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
};

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
    if (c != 'B' && c != 'D') return std::nullopt;
    steps.push_back(static_cast<CapsStep>(c));
  }
  return steps;
}

std::unique_ptr<DistAlgorithm> make_algorithm(Algorithm algo, const Comm& world, GemmShape shape,
                                              const AlgoOptions& opts) {
  if (algo == Algorithm::automatic) {
    // Of the algorithms that fit this rank count, the one whose busiest rank sends the fewest
    // words for this shape (SUMMA always fits; Cannon on squares, DNS on cubes).
    std::unique_ptr<DistAlgorithm> best = make_summa(world, shape, opts);
    const int P = world.size();
    auto consider = [&](std::unique_ptr<DistAlgorithm> a) {
      if (a->analytic().words_max < best->analytic().words_max) best = std::move(a);
    };
    if (P > 1 && exact_root(P, 2)) consider(make_cannon(world, shape, opts));
    if (P > 1 && exact_root(P, 3)) consider(make_dns(world, shape, opts));
    return best;
  }
  for (const Entry& e : kAlgorithms)
    if (e.algo == algo) return e.make(world, shape, opts);
  throw UsageError("unknown algorithm");
}

}  // namespace distmm
