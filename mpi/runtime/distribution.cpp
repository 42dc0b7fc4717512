#include "distribution.hpp"

namespace distmm {

namespace {
std::vector<index_t> encode(const Piece& p) {
  std::vector<index_t> e{static_cast<index_t>(p.row_runs.size()),
                         static_cast<index_t>(p.col_runs.size())};
  for (const auto& r : p.row_runs) e.insert(e.end(), {r.global, r.length});
  for (const auto& r : p.col_runs) e.insert(e.end(), {r.global, r.length});
  return e;
}
Piece decode(const std::vector<index_t>& e) {
  Piece p;
  std::size_t at = 2;
  for (index_t t = 0; t < e[0]; ++t, at += 2) p.row_runs.push_back({e[at], e[at + 1]});
  for (index_t t = 0; t < e[1]; ++t, at += 2) p.col_runs.push_back({e[at], e[at + 1]});
  return p;
}
// A non-root rank describes its piece to the root ...
void send_piece(const Piece& p, const Comm& comm, int root, int tag) {
  std::vector<index_t> meta = encode(p);
  index_t len = static_cast<index_t>(meta.size());
  MPI_Send(&len, 1, MPI_INT64_T, root, tag, comm.get());
  MPI_Send(meta.data(), mpi_count(len), MPI_INT64_T, root, tag, comm.get());
}
// ... and the root visits every other rank's piece, in rank order.
template <class F>
void for_each_remote_piece(const Comm& comm, int root, int tag, F&& f) {
  for (int r = 0; r < comm.size(); ++r) {
    if (r == root) continue;
    index_t len;
    MPI_Recv(&len, 1, MPI_INT64_T, r, tag, comm.get(), MPI_STATUS_IGNORE);
    std::vector<index_t> e(static_cast<std::size_t>(len));
    MPI_Recv(e.data(), mpi_count(len), MPI_INT64_T, r, tag, comm.get(), MPI_STATUS_IGNORE);
    f(r, decode(e));
  }
}

}  // namespace

std::vector<Piece> allgather_pieces(const Piece& mine, const Comm& comm) {
  const std::vector<index_t> meta = encode(mine);
  const int P = comm.size();
  std::vector<int> counts(P), displs(P);
  int n = mpi_count(index_t(meta.size()));
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, comm.get());
  int total = 0;
  for (int r = 0; r < P; ++r) displs[r] = total, total += counts[r];
  std::vector<index_t> all(static_cast<std::size_t>(total));
  MPI_Allgatherv(meta.data(), n, MPI_INT64_T, all.data(), counts.data(), displs.data(), MPI_INT64_T,
                 comm.get());
  std::vector<Piece> out(P);
  for (int r = 0; r < P; ++r)
    out[r] = decode(std::vector<index_t>(all.begin() + displs[r], all.begin() + displs[r] + counts[r]));
  return out;
}

template <class T>
Matrix<T> gather_to_root(const DistMatrix<T>& M, const Comm& comm, int root) {
  const int tag_meta = 9001, tag_data = 9002;
  Matrix<T> out;
  if (comm.rank() != root) {
    send_piece(M.piece, comm, root, tag_meta);
    if (M.local.size() > 0)
      MPI_Send(M.local.data(), mpi_count(M.local.size()), mpi_type<T>(), root, tag_data, comm.get());
    return out;
  }
  out.resize(M.rows, M.cols);
  out.fill(T(0));
  auto place = [&](const Piece& p, const T* data) {
    index_t ld = std::max<index_t>(p.rows(), 1);
    for_each_run_block(p, [&](index_t lr, index_t lc, index_t gr, index_t gc, index_t nr,
                              index_t nc) {
      for (index_t j = 0; j < nc; ++j)
        std::copy(data + lr + (lc + j) * ld, data + lr + (lc + j) * ld + nr,
                  &out(gr, gc + j));
    });
  };
  place(M.piece, M.local.data());
  std::vector<T> buf;
  for_each_remote_piece(comm, root, tag_meta, [&](int r, const Piece& p) {
    index_t n = p.rows() * p.cols();
    if (n == 0) return;
    buf.resize(static_cast<std::size_t>(n));
    MPI_Recv(buf.data(), mpi_count(n), mpi_type<T>(), r, tag_data, comm.get(), MPI_STATUS_IGNORE);
    place(p, buf.data());
  });
  return out;
}

template <class T>
void scatter_from_root(const Matrix<T>& whole, DistMatrix<T>& M, const Comm& comm, int root) {
  const int tag_meta = 9003, tag_data = 9004;
  auto take = [&](const Piece& p, T* data) {  // copy p's elements out of `whole`
    index_t ld = std::max<index_t>(p.rows(), 1);
    for_each_run_block(p, [&](index_t lr, index_t lc, index_t gr, index_t gc, index_t nr,
                              index_t nc) {
      for (index_t j = 0; j < nc; ++j)
        std::copy(&whole(gr, gc + j), &whole(gr, gc + j) + nr, data + lr + (lc + j) * ld);
    });
  };
  if (comm.rank() != root) {
    send_piece(M.piece, comm, root, tag_meta);
    if (M.local.size() > 0)
      MPI_Recv(M.local.data(), mpi_count(M.local.size()), mpi_type<T>(), root, tag_data,
               comm.get(), MPI_STATUS_IGNORE);
    return;
  }
  take(M.piece, M.local.data());
  std::vector<T> buf;
  for_each_remote_piece(comm, root, tag_meta, [&](int r, const Piece& p) {
    index_t n = p.rows() * p.cols();
    if (n == 0) return;
    buf.resize(static_cast<std::size_t>(n));
    take(p, buf.data());
    MPI_Send(buf.data(), mpi_count(n), mpi_type<T>(), r, tag_data, comm.get());
  });
}

#define DISTMM_DISTRIBUTION(T)                                                         \
  template void scatter_from_root(const Matrix<T>&, DistMatrix<T>&, const Comm&, int); \
  template Matrix<T> gather_to_root(const DistMatrix<T>&, const Comm&, int);
DISTMM_FOR_EACH_TYPE(DISTMM_DISTRIBUTION)
#undef DISTMM_DISTRIBUTION

}  // namespace distmm
