#include "npy_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

namespace distmm {

namespace {

std::string base_name(const std::string& p) {
  auto s = p.find_last_of('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}
std::string dir_name(const std::string& p) {
  auto s = p.find_last_of('/');
  return s == std::string::npos ? "." : (s == 0 ? "/" : p.substr(0, s));
}

// Rank 0's verdict, shared: ok, or the message every rank throws.
void agree(const Comm& comm, std::string& error) {
  long long len = static_cast<long long>(error.size());
  MPI_Bcast(&len, 1, MPI_LONG_LONG, 0, comm.get());
  error.resize(static_cast<std::size_t>(len));
  if (len) MPI_Bcast(error.data(), static_cast<int>(len), MPI_CHAR, 0, comm.get());
  if (!error.empty()) throw UsageError(error);
}

std::string shape_text(const std::vector<std::int64_t>& s) {
  std::string t = "(";
  for (std::size_t i = 0; i < s.size(); ++i) t += std::to_string(s[i]) + (s.size() == 1 || i + 1 < s.size() ? "," : "");
  return t + ")";
}

NpyInfo inspect_on_root(const std::string& path) {
  NpyInfo info;
  info.path = path;
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0)
    throw NpyError(errno == ENOENT ? "no such file: check the path"
                                   : std::string("cannot be read: ") + std::strerror(errno));
  struct stat st;
  fstat(fd, &st);
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw NpyError("is a directory, not a .npy file");
  }
  std::vector<std::uint8_t> head(static_cast<std::size_t>(std::min<off_t>(st.st_size, 1 << 20)));
  ssize_t got = ::read(fd, head.data(), head.size());
  ::close(fd);
  if (got < 0) throw NpyError(std::string("cannot be read: ") + std::strerror(errno));
  NpyHeader h = parse_npy_header(head.data(), static_cast<std::size_t>(got));
  Dtype dt = npy_dtype(h.descr);
  if (h.shape.size() != 2)
    throw NpyError("is " + std::to_string(h.shape.size()) + "-D (shape " + shape_text(h.shape) +
                   "): distmm multiplies 2-D arrays; reshape with numpy, e.g. a.reshape(rows, cols)");
  if (h.shape[0] < 1 || h.shape[1] < 1)
    throw NpyError("is empty (shape " + shape_text(h.shape) + "): every dimension must be at least 1");
  if (h.shape[0] > INT32_MAX || h.shape[1] > INT32_MAX)
    throw NpyError("has a dimension beyond 2^31-1, the largest BLAS takes");
  const double need = double(h.data_offset) + double(h.shape[0]) * double(h.shape[1]) * size_of(dt);
  if (double(st.st_size) < need)
    throw NpyError("is truncated: shape " + shape_text(h.shape) + " needs " +
                   std::to_string(static_cast<long long>(need)) + " bytes, the file has " +
                   std::to_string(static_cast<long long>(st.st_size)));
  info.dtype = dt;
  info.rows = h.shape[0];
  info.cols = h.shape[1];
  info.fortran_order = h.fortran_order;
  info.data_offset = h.data_offset;
  return info;
}

// A file view selecting `segments` (offset, length in elements) after the header.
class FileView {
 public:
  FileView(MPI_Datatype etype, const std::vector<std::pair<index_t, index_t>>& segments) {
    std::vector<int> lens;
    std::vector<MPI_Aint> disps;
    int esize;
    MPI_Type_size(etype, &esize);
    for (auto [off, len] : segments) {
      lens.push_back(mpi_count(len));
      disps.push_back(static_cast<MPI_Aint>(off) * esize);
    }
    MPI_Type_create_hindexed(static_cast<int>(lens.size()), lens.data(), disps.data(), etype, &type_);
    MPI_Type_commit(&type_);
  }
  ~FileView() { MPI_Type_free(&type_); }
  FileView(const FileView&) = delete;
  FileView& operator=(const FileView&) = delete;
  MPI_Datatype get() const { return type_; }

 private:
  MPI_Datatype type_;
};

// Closes an MPI file on scope exit.
struct MpiFile {
  MPI_File fh = MPI_FILE_NULL;
  ~MpiFile() {
    if (fh != MPI_FILE_NULL) MPI_File_close(&fh);
  }
};

}  // namespace

NpyInfo npy_inspect(const std::string& path, const Comm& comm) {
  NpyInfo info;
  std::string error;
  if (comm.rank() == 0) {
    try {
      info = inspect_on_root(path);
    } catch (const NpyError& e) {
      error = path + ": " + e.what();
    }
  }
  agree(comm, error);
  long long v[5] = {info.rows, info.cols, info.fortran_order, static_cast<long long>(info.data_offset),
                    info.dtype == Dtype::f32 ? 4 : 8};
  MPI_Bcast(v, 5, MPI_LONG_LONG, 0, comm.get());
  info.path = path;
  info.rows = v[0], info.cols = v[1], info.fortran_order = v[2] != 0;
  info.data_offset = static_cast<std::size_t>(v[3]);
  info.dtype = v[4] == 4 ? Dtype::f32 : Dtype::f64;
  return info;
}

template <class T>
void npy_read_piece(const NpyInfo& info, bool transposed, DistMatrix<T>& M, const Comm& comm) {
  // The stored block this rank reads: the piece itself, or its transpose.
  const std::vector<Run>& srows = transposed ? M.piece.col_runs : M.piece.row_runs;
  const std::vector<Run>& scols = transposed ? M.piece.row_runs : M.piece.col_runs;
  const index_t nr = Piece::total(srows), nc = Piece::total(scols);
  std::vector<std::pair<index_t, index_t>> seg;
  if (info.fortran_order) {  // columns are contiguous in the file
    for (const Run& c : scols)
      for (index_t j = c.global; j < c.global + c.length; ++j)
        for (const Run& r : srows) seg.push_back({j * info.rows + r.global, r.length});
  } else {  // rows are contiguous
    for (const Run& r : srows)
      for (index_t i = r.global; i < r.global + r.length; ++i)
        for (const Run& c : scols) seg.push_back({i * info.cols + c.global, c.length});
  }
  if (nr == 0 || nc == 0) seg.clear();
  std::vector<T> buf(static_cast<std::size_t>(nr * nc));
  FileView view(mpi_type<T>(), seg);
  MpiFile f;
  int rc = MPI_File_open(comm.get(), info.path.c_str(), MPI_MODE_RDONLY, MPI_INFO_NULL, &f.fh);
  if (comm.any(rc != MPI_SUCCESS)) throw UsageError(info.path + ": cannot be opened for MPI-IO");
  MPI_File_set_view(f.fh, static_cast<MPI_Offset>(info.data_offset), mpi_type<T>(), view.get(),
                    "native", MPI_INFO_NULL);
  MPI_Status st;
  rc = MPI_File_read_all(f.fh, buf.data(), mpi_count(nr * nc), mpi_type<T>(), &st);
  int got = 0;
  MPI_Get_count(&st, mpi_type<T>(), &got);
  if (comm.any(rc != MPI_SUCCESS || got != nr * nc))
    throw UsageError(info.path + ": reading the data failed (truncated or unreadable)");
  // buf holds the stored block, column-major (Fortran files) or row-major (C files).
  auto stored = [&](index_t i, index_t j) {
    return info.fortran_order ? buf[i + j * nr] : buf[i * nc + j];
  };
  for (index_t j = 0; j < M.local.cols(); ++j)
    for (index_t i = 0; i < M.local.rows(); ++i)
      M.local(i, j) = transposed ? stored(j, i) : stored(i, j);
}

template void npy_read_piece(const NpyInfo&, bool, DistMatrix<float>&, const Comm&);
template void npy_read_piece(const NpyInfo&, bool, DistMatrix<double>&, const Comm&);

NpyOutput::NpyOutput(std::string path, const Comm& comm) : path_(std::move(path)), comm_(comm) {
  std::string error;
  char tmp[64];
  if (comm.rank() == 0) {
    const std::string dir = dir_name(path_);
    struct stat st;
    if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      error = path_ + ": directory '" + dir + "' does not exist: create it or choose another --out";
    else if (access(dir.c_str(), W_OK) != 0)
      error = path_ + ": directory '" + dir + "' is not writable: choose another --out";
    else if (stat(path_.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      error = path_ + ": is a directory: give a file name for --out";
    std::snprintf(tmp, sizeof tmp, ".tmp.%d.%ld", static_cast<int>(getpid()), static_cast<long>(time(nullptr)));
  }
  agree(comm, error);
  MPI_Bcast(tmp, sizeof tmp, MPI_CHAR, 0, comm.get());
  tmp_ = dir_name(path_) + "/." + base_name(path_) + tmp;
}

NpyOutput::~NpyOutput() {
  if (!committed_ && written_ && comm_.rank() == 0) ::unlink(tmp_.c_str());
}

template <class T>
void NpyOutput::write(const DistMatrix<T>& M) {
  const std::string header = make_npy_header(dtype_of<T>(), M.rows, M.cols, true);
  std::vector<std::pair<index_t, index_t>> seg;
  if (!M.piece.empty())
    for (const Run& c : M.piece.col_runs)
      for (index_t j = c.global; j < c.global + c.length; ++j)
        for (const Run& r : M.piece.row_runs) seg.push_back({j * M.rows + r.global, r.length});
  FileView view(mpi_type<T>(), seg);
  MpiFile f;
  written_ = true;
  int rc = MPI_File_open(comm_.get(), tmp_.c_str(), MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &f.fh);
  if (comm_.any(rc != MPI_SUCCESS)) throw UsageError(path_ + ": cannot create the output file");
  int ok = 1;
  if (comm_.rank() == 0) {
    MPI_Status st;
    ok = MPI_File_write_at(f.fh, 0, header.data(), static_cast<int>(header.size()), MPI_CHAR, &st) == MPI_SUCCESS;
  }
  MPI_File_set_view(f.fh, static_cast<MPI_Offset>(header.size()), mpi_type<T>(), view.get(), "native",
                    MPI_INFO_NULL);
  MPI_Status st;
  rc = MPI_File_write_all(f.fh, M.local.data(), mpi_count(M.piece.empty() ? 0 : M.local.size()),
                          mpi_type<T>(), &st);
  ok = ok && rc == MPI_SUCCESS && MPI_File_sync(f.fh) == MPI_SUCCESS;
  if (comm_.any(!ok)) throw UsageError(path_ + ": writing the output failed (disk full?)");
}

template void NpyOutput::write(const DistMatrix<float>&);
template void NpyOutput::write(const DistMatrix<double>&);

void NpyOutput::commit() {
  std::string error;
  if (comm_.rank() == 0) {
    if (std::rename(tmp_.c_str(), path_.c_str()) != 0)
      error = path_ + ": could not move the finished output into place: " + std::strerror(errno);
    int dfd = ::open(dir_name(path_).c_str(), O_RDONLY);
    if (dfd >= 0) fsync(dfd), ::close(dfd);
  }
  agree(comm_, error);
  committed_ = true;
}

}  // namespace distmm
