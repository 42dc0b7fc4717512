#include <functional>
#include <map>

#include "algorithms.hpp"
#include "grid.hpp"

namespace distmm {
namespace {

using Factory = std::function<std::unique_ptr<DistAlgorithm>(const Comm&, GemmShape,
                                                             const AlgoOptions&)>;

const std::map<std::string, Factory>& registry() {
  static const std::map<std::string, Factory> r = {
      {"summa", make_summa},   {"cannon", make_cannon}, {"dns", make_dns},
      {"scalapack", make_scalapack}, {"caps", make_caps},
  };
  return r;
}

}  // namespace

std::vector<std::string> algorithm_names() {
  std::vector<std::string> names{"auto"};
  for (const auto& [k, v] : registry()) names.push_back(k);
  return names;
}

std::unique_ptr<DistAlgorithm> make_algorithm(const std::string& name, const Comm& world,
                                              GemmShape shape, const AlgoOptions& opts) {
  if (name == "auto") {
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
  auto it = registry().find(name);
  if (it == registry().end()) {
    std::string known;
    for (const auto& n : algorithm_names()) known += (known.empty() ? "" : ", ") + n;
    throw UsageError("unknown algorithm '" + name + "': use one of " + known);
  }
  return it->second(world, shape, opts);
}

}  // namespace distmm
