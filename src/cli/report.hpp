// The readable report of one run, printed on rank 0 (the JSON line is mpi/run.hpp's to_json).
#pragma once
#include <ostream>

#include "../../mpi/run/run.hpp"

namespace distmm {

void print_report(const RunReport& r, std::ostream& os);
// What a run would do (plan()): decomposition, counts per rank, memory, bounds.
void print_plan(const RunReport& r, std::ostream& os);

}  // namespace distmm
