// The run's report (run_report.cpp): what the plan fixes, then what the run measures, then the
// figures of the product; to_json (run.hpp) writes it.
#pragma once
#include <string>
#include <vector>

#include "run_plan.hpp"
#include "verify.hpp"

namespace distmm {

// The fields a plan fixes (algorithm, layout, residency, counts, memory, bounds); collective.
RunReport planned_report(const RunPlan& p, const Comm& world);
// plan(): the report of a run that is not executed (the counts it would measure).
void record_planned(const RunPlan& p, RunReport& rec);

// Phase seconds `t` (of `names`) of the last repetition and its measured communication: max
// and mean over ranks.
void collect_measurements(const Comm& world, const std::vector<std::string>& names, std::vector<double> t,
                          const CommCounters& counted, RunReport& rec);
void collect_measurements(const Comm& world, const DistAlgorithm& algo, const CommCounters& counted, RunReport& rec);
// The tolerance follows what ran: the engine's levels on every rank (the largest counts) and
// the algorithm's Strassen-like steps; one value, shared, so every rank decides alike.
double error_growth(const Comm& world, const DistAlgorithm& algo, const Engine& engine, RunReport& rec);
// The verification's figures, and one collective verdict.
void record_verdict(const VerifyResult& v, const Comm& world, RunReport& rec);
// After the multiplies: what the engine chose and ran, the times' summary, where and when.
void record_run(const RunPlan& p, RunReport& rec);

}  // namespace distmm
