// --algo auto for a device-resident run (make_algorithm, algorithm_registry.cpp): SUMMA, cuboid,
// Cannon and DNS where P fits, and CAPS (its BFS steps where P = m 7^k, its dealt steps on any P,
// each with both formulas) where the caller accepts Strassen's error growth, the model's device
// section is measured and the steps' buffers fit the device memory; each priced by the GPU model
// (cost_model.hpp: DeviceModel): the busiest rank's flops at the engine's measured rate for its
// largest local product, its words over the device link, its messages at the link's latency and
// its streamed elements at the device memory's rate.
#include <algorithm>
#include <cstdio>

#include "algorithms.hpp"
#include "caps.hpp"
#include "cost_model.hpp"
#include "../runtime/counting_space.hpp"
#include "../runtime/grid.hpp"

namespace distmm {

namespace {

// CAPS's step sequences weighed on a device: DFS steps above the BFS steps that P = m 7^k
// allows (0 to 2 of them), and 1 to 3 dealt steps below none or all of those BFS steps (any P
// >= 2), each leaving leaves of at least kLeastLeaf in every dimension.
constexpr index_t kLeastLeaf = 64;
constexpr int kMostDfs = 2, kMostDealt = 3;

std::vector<CapsSteps> device_caps_sequences(int P, GemmShape s) {
  const auto f = caps_factors(P);
  int v7 = 0;
  for (int q = P; q % 7 == 0; q /= 7) ++v7;
  const index_t smallest = std::min({s.m, s.n, s.k});
  std::vector<CapsSteps> seqs;
  if (f && f->second >= 1)
    for (int d = 0; d <= kMostDfs; ++d) {
      if ((smallest >> (d + f->second)) < kLeastLeaf) break;
      CapsSteps st(std::size_t(d), CapsStep::dfs);
      st.insert(st.end(), std::size_t(f->second), CapsStep::bfs);
      seqs.push_back(st);
    }
  for (int b : {0, v7})
    for (int L = 1; L <= kMostDealt; ++L) {
      if (P < 2 || (smallest >> (b + L)) < kLeastLeaf) break;
      CapsSteps st(std::size_t(b), CapsStep::bfs);
      st.insert(st.end(), std::size_t(L), CapsStep::dealt);
      if (std::find(seqs.begin(), seqs.end(), st) == seqs.end()) seqs.push_back(st);
    }
  return seqs;
}

// Device bytes a device-resident run of `a` reserves on this rank, as the run's planner counts
// them (run_plan.cpp, device_need): A and B where they have no home in a buffer, C, the
// algorithm's buffers (sizes from a space of addresses alone) and the engine's workspace for its
// largest product.
double device_bytes(const DistAlgorithm& a, const Engine& e, Dtype dt, const DeviceSpace& addresses) {
  using In = DistAlgorithm::Input;
  const auto bytes = [&](const Piece& p) { return double(p.rows()) * double(p.cols()) * double(size_of(dt)); };
  const GemmShape g = a.largest_product();
  return (a.device_home(In::a) ? 0.0 : bytes(a.piece_a())) + (a.device_home(In::b) ? 0.0 : bytes(a.piece_b())) +
         bytes(a.piece_c()) + double(a.device_extra_bytes(dt, addresses)) + double(e.workspace_bytes(g.m, g.n, g.k, dt));
}

}  // namespace

std::unique_ptr<DistAlgorithm> make_auto_device(const Comm& world, GemmShape shape, const AlgoOptions& opts) {
  const MachineModel mm = machine_model(world);
  const DeviceModel& dm = mm.device;
  const std::string engine = opts.engine ? opts.engine->name() : std::string("(no engine)");
  const Dtype dt = opts.dtype;
  const int P = world.size();
  std::vector<std::unique_ptr<DistAlgorithm>> cands;
  std::vector<std::string> keys;
  // Cuboid first: where the model prices it and SUMMA alike (the same words over one link), the
  // first is taken, and cuboid's all-gathers ran 1-33% faster than SUMMA's panel gathers on 4
  // GPUs (docs/performance.md, "A network between the GPUs": NVLink and NCCL's sockets).
  cands.push_back(make_cuboid(world, shape, opts)), keys.push_back("cuboid");
  cands.push_back(make_summa(world, shape, opts)), keys.push_back("summa");
  if (P > 1 && exact_root(P, 2)) cands.push_back(make_cannon(world, shape, opts)), keys.push_back("cannon");
  if (P > 1 && exact_root(P, 3)) cands.push_back(make_dns(world, shape, opts)), keys.push_back("dns");

  // CAPS: only under a measured device model (its gain is a fraction of the multiply time, its
  // cost the device memory's rate and the link, which defaults cannot know), and only sequences
  // whose buffers fit the device memory (the largest estimate over the ranks: every rank keeps
  // the same candidates, each of which builds communicators).
  std::string caps_note;
  std::vector<CapsSteps> seqs = device_caps_sequences(P, shape);
  if (!opts.strassen_like_ok)
    caps_note = "caps not weighed: a classical product asked for (by the caller, or for a streamed run's stages)";
  else if (!dm.measured) caps_note = "caps not weighed without a measured device model (run distmm calibrate --device)";
  else if (!opts.engine) caps_note = "caps not weighed: no engine to size its memory";
  else if (seqs.empty())
    caps_note = "caps not weighed: " + std::string(P < 2 ? "one rank" : "leaves below 64 at one step");
  else {
    const double limit = plan_memory_limit(world, shape, opts);
    std::vector<double> need(seqs.size());
    for (std::size_t i = 0; i < seqs.size(); ++i)
      need[i] = caps_peak_words(shape, P, seqs[i], *opts.engine, dt) * double(size_of(dt));
    MPI_Allreduce(MPI_IN_PLACE, need.data(), int(need.size()), MPI_DOUBLE, MPI_MAX, world.get());
    std::vector<const BilinearFormula*> formulas;
    if (opts.formula) formulas.push_back(opts.formula);
    else formulas = {&kStrassenFormula, &kWinogradFormula};
    // Then what the run will reserve for each that passed (its pieces, buffers and the engine's
    // workspace for its leaves, as the planner's device_need counts them), so that auto never
    // picks a plan that the run's memory check refuses.
    std::vector<std::unique_ptr<DistAlgorithm>> caps;
    std::vector<std::size_t> seq_of;
    std::vector<const BilinearFormula*> formula_of;
    for (std::size_t i = 0; i < seqs.size(); ++i)
      for (const BilinearFormula* f : need[i] <= limit ? formulas : std::vector<const BilinearFormula*>{}) {
        AlgoOptions co = opts;
        co.caps_steps = seqs[i], co.formula = f;
        caps.push_back(make_caps(world, shape, co)), seq_of.push_back(i), formula_of.push_back(f);
      }
    std::vector<double> reserved(caps.size());
    const CountingSpace addresses;  // buffers' sizes only
    for (std::size_t c = 0; c < caps.size(); ++c) reserved[c] = device_bytes(*caps[c], *opts.engine, dt, addresses);
    MPI_Allreduce(MPI_IN_PLACE, reserved.data(), int(reserved.size()), MPI_DOUBLE, MPI_MAX, world.get());
    std::vector<bool> fits(seqs.size(), false);
    for (std::size_t c = 0; c < caps.size(); ++c) {
      if (reserved[c] > limit) continue;
      fits[seq_of[c]] = true;
      keys.push_back("caps " + to_string(seqs[seq_of[c]]) + " " + formula_of[c]->name);
      cands.push_back(std::move(caps[c]));
    }
    std::string weighed, left_out;
    for (std::size_t i = 0; i < seqs.size(); ++i) {
      std::string& into = fits[i] ? weighed : left_out;
      into += (into.empty() ? "" : ", ") + to_string(seqs[i]);
    }
    caps_note = weighed.empty() ? "caps not weighed: no step sequence fits the device memory (" + left_out + ")"
                                : "caps weighed with steps " + weighed +
                                      (left_out.empty() ? "" : " (" + left_out + " do not fit the device memory)");
  }

  std::vector<double> t, words;
  bool all_measured = true;
  char buf[224];
  std::string rows;
  for (std::size_t a = 0; a < cands.size(); ++a) {
    const CommEstimate e = cands[a]->analytic();
    const GemmShape g = cands[a]->largest_product();
    const DevicePrediction p = device_predicted_seconds(dm, engine, dt, e, g.m, g.n, g.k);
    all_measured = all_measured && p.rate_measured;
    t.push_back(p.seconds), words.push_back(e.words_max);
    std::snprintf(buf, sizeof buf, " %s %.3g s %.3g words (%lldx%lldx%lld at %.3g GFLOP/s)%s", keys[a].c_str(),
                  p.seconds, e.words_max, (long long)g.m, (long long)g.n, (long long)g.k, p.rate / 1e9,
                  a + 1 < cands.size() ? "," : "");
    rows += buf;
  }
  const std::size_t best = words_first_choice(t, words);
  std::string why = "auto (device model): " + keys[best] + " (" + cands[best]->layout() +
                    "): of those predicted within 10% of the fastest, the fastest of those within 5% of the fewest "
                    "words:" + rows;
  std::snprintf(buf, sizeof buf, "; device model: link %.3g GB/s, %.3g us, memory %.3g GB/s, ",
                dm.link_bytes_per_s / 1e9, dm.link_latency_s * 1e6, dm.memory_bytes_per_s / 1e9);
  why += buf;
  if (!dm.measured) {
    why += "GPU defaults (" +
           (mm.measured ? machine_model_path() + " has no device section" : "no machine file at " + machine_model_path()) +
           ": run distmm calibrate --device)";
  } else {
    why += "from " + machine_model_path() + " (distmm calibrate --device on " + dm.device +
           (dm.transport.empty() ? "" : ", link " + dm.transport) + ")";
    if (!all_measured) {
      std::snprintf(buf, sizeof buf, "; %s %s not measured there: a default %.3g GFLOP/s", engine.c_str(),
                    to_string(dt), dm.default_flops_per_s / 1e9);
      why += buf;
    }
  }
  why += "; " + caps_note;
  if (!cands[best]->selection().empty()) why += "; " + cands[best]->selection();
  auto chosen = std::move(cands[best]);
  chosen->set_selection(why);
  return chosen;
}

}  // namespace distmm
