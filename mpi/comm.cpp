#include "comm.hpp"

namespace distmm {

CommCounters& comm_counters() {
  static CommCounters c;
  return c;
}

int mpi_count(index_t n) {
  if (n < 0 || n > INT_MAX)
    throw UsageError("a message of " + std::to_string(n) +
                     " elements exceeds MPI's int count: use more ranks");
  return static_cast<int>(n);
}

Comm Comm::split(int color, int key) const {
  MPI_Comm out;
  MPI_Comm_split(c_, color < 0 ? MPI_UNDEFINED : color, key, &out);
  return Comm(out, true);
}

Comm Comm::dup() const {
  MPI_Comm out;
  MPI_Comm_dup(c_, &out);
  return Comm(out, true);
}

bool Comm::any(bool flag) const {
  int v = flag ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_LOR, c_);
  return v != 0;
}

namespace {
std::pair<int, int> node_local() {
  static std::pair<int, int> cached{-1, -1};
  if (cached.first < 0) {
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    Comm c(local, true);
    cached = {c.rank(), c.size()};
  }
  return cached;
}
}  // namespace

int node_local_rank() { return node_local().first; }
int node_local_size() { return node_local().second; }

}  // namespace distmm
