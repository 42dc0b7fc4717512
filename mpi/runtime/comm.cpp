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

MPI_Datatype Comm::strided_type(MPI_Datatype base, index_t blocks, index_t run, index_t stride) {
  MPI_Datatype t;
  MPI_Type_vector(mpi_count(blocks), mpi_count(run), mpi_count(stride), base, &t);
  MPI_Type_commit(&t);
  return t;
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

void Comm::agree(std::string error, bool unwritable) const {
  long long head[2] = {static_cast<long long>(error.size()), unwritable};
  MPI_Bcast(head, 2, MPI_LONG_LONG, 0, c_);
  error.resize(static_cast<std::size_t>(head[0]));
  if (head[0]) MPI_Bcast(error.data(), static_cast<int>(head[0]), MPI_CHAR, 0, c_);
  if (!error.empty() && head[1]) throw OutputError(error);
  if (!error.empty()) throw UsageError(error);
}

std::string Comm::first_error(const std::string& mine) const {
  int who = mine.empty() ? size_ : rank_;
  MPI_Allreduce(MPI_IN_PLACE, &who, 1, MPI_INT, MPI_MIN, c_);
  if (who == size_) return "";
  long long len = rank_ == who ? static_cast<long long>(mine.size()) : 0;
  MPI_Bcast(&len, 1, MPI_LONG_LONG, who, c_);
  std::string msg = rank_ == who ? mine : std::string(static_cast<std::size_t>(len), ' ');
  MPI_Bcast(msg.data(), static_cast<int>(len), MPI_CHAR, who, c_);
  return msg;
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

int node_local_size(const Comm& comm) {
  MPI_Comm local;
  MPI_Comm_split_type(comm.get(), MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  Comm c(local, true);
  return c.size();
}

}  // namespace distmm
