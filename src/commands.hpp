// The small commands beside `run`.
#pragma once
#include <ostream>

namespace distmm {
int info_command(std::ostream& os, int rank);
}
