#include "npy_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <vector>

#include "../../src/core/files.hpp"

namespace distmm {

namespace {

// Open MPI's shared-file-pointer components copy the name given to MPI_File_open into 256-byte
// buffers (a longer one aborts the process): MPI-IO opens a name relative to the file's
// directory, one of at most this many characters; an input with a longer name is read with POSIX
// I/O instead (the output's temporary name is always short).
constexpr std::size_t kMpiIoNameMax = 200;

std::string shape_text(const std::vector<std::int64_t>& s) {
  std::string t = "(";
  for (std::size_t i = 0; i < s.size(); ++i) t += std::to_string(s[i]) + (s.size() == 1 || i + 1 < s.size() ? "," : "");
  return t + ")";
}

NpyInfo inspect_on_root(const std::string& path) {
  NpyInfo info;
  info.path = path;
  const int fd = open_input(path, "");
  struct stat st;
  fstat(fd, &st);
  // The preamble (12 bytes at most) and the longest header read.
  std::vector<std::uint8_t> head(static_cast<std::size_t>(std::min<off_t>(st.st_size, kNpyHeaderMax + 12)));
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

// The segments (offset, length in elements after `offset` bytes) read in turn into buf, as the
// file view reads them; false when the file cannot be read whole.
template <class T>
bool pread_segments(const std::string& path, std::size_t offset, const std::vector<std::pair<index_t, index_t>>& seg,
                    T* buf) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = true;
  for (auto [off, len] : seg) {
    auto* to = reinterpret_cast<char*>(buf);
    const std::size_t want = static_cast<std::size_t>(len) * sizeof(T);
    const off_t at = static_cast<off_t>(offset + static_cast<std::size_t>(off) * sizeof(T));
    std::size_t done = 0;
    while (ok && done < want) {
      const ssize_t got = ::pread(fd, to + done, want - done, at + static_cast<off_t>(done));
      ok = got > 0;
      if (ok) done += static_cast<std::size_t>(got);
    }
    buf += len;
  }
  ::close(fd);
  return ok;
}

}  // namespace

NpyInfo npy_inspect(const std::string& path, const Comm& comm) {
  NpyInfo info;
  std::string error;
  if (comm.rank() == 0) {
    try {
      info = inspect_on_root(path);
    } catch (const NpyError& e) {
      error = path + ": " + e.what();
    } catch (const UsageError& e) {  // not a regular file, or none: named by open_input
      error = e.what();
    }
  }
  comm.agree(error);
  long long v[5] = {info.rows, info.cols, info.fortran_order, static_cast<long long>(info.data_offset),
                    static_cast<long long>(info.dtype)};
  MPI_Bcast(v, 5, MPI_LONG_LONG, 0, comm.get());
  info.path = path;
  info.rows = v[0], info.cols = v[1], info.fortran_order = v[2] != 0;
  info.data_offset = static_cast<std::size_t>(v[3]);
  info.dtype = static_cast<Dtype>(v[4]);
  return info;
}

template <class T>
void npy_read_piece(const NpyInfo& info, Op op, DistMatrix<T>& M, const Comm& comm) {
  const bool transposed = op != Op::N, conjugated = op == Op::C && is_complex_v<T>;
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
  const std::string name = base_name(info.path);
  bool failed = false;
  if (name.size() > kMpiIoNameMax) {
    failed = !pread_segments(info.path, info.data_offset, seg, buf.data());
  } else {
    FileView view(mpi_type<T>(), seg);
    InDirectory in(dir_name(info.path));
    MpiFile f;
    int rc;
    {
      HoldEndingSignals hold;
      rc = MPI_File_open(comm.get(), in.ok() ? name.c_str() : info.path.c_str(), MPI_MODE_RDONLY, MPI_INFO_NULL,
                         &f.fh);
    }
    if (comm.any(rc != MPI_SUCCESS)) throw UsageError(info.path + ": cannot be opened for MPI-IO");
    MPI_File_set_view(f.fh, static_cast<MPI_Offset>(info.data_offset), mpi_type<T>(), view.get(),
                      "native", MPI_INFO_NULL);
    MPI_Status st;
    rc = MPI_File_read_all(f.fh, buf.data(), mpi_count(nr * nc), mpi_type<T>(), &st);
    int got = 0;
    MPI_Get_count(&st, mpi_type<T>(), &got);
    failed = rc != MPI_SUCCESS || got != nr * nc;
  }
  if (comm.any(failed)) throw UsageError(info.path + ": reading the data failed (truncated or unreadable)");
  // buf holds the stored block, column-major (Fortran files) or row-major (C files).
  auto stored = [&](index_t i, index_t j) {
    return info.fortran_order ? buf[i + j * nr] : buf[i * nc + j];
  };
  for (index_t j = 0; j < M.local.cols(); ++j)
    for (index_t i = 0; i < M.local.rows(); ++i) {
      const T v = transposed ? stored(j, i) : stored(i, j);
      if constexpr (is_complex_v<T>) M.local(i, j) = conjugated ? std::conj(v) : v;
      else M.local(i, j) = v;
    }
}

NpyOutput::NpyOutput(std::string path, const Comm& comm) : path_(std::move(path)), comm_(comm) {
  PathProblem problem;
  char name[NAME_MAX + 1] = {};
  if (comm.rank() == 0) {
    problem = output_problem(path_, "--out");
    std::snprintf(name, sizeof name, "%s", TemporaryFile::make_name(path_).c_str());
  }
  comm.agree(problem.message, problem.unwritable);
  MPI_Bcast(name, sizeof name, MPI_CHAR, 0, comm.get());  // rank 0's pid and time name it on every rank
  tmp_ = std::make_unique<TemporaryFile>(path_, name);
}

namespace {
// What an MPI-IO error means, for the message (ENOSPC, EDQUOT, EIO, EFBIG and others).
std::string io_cause(int rc) {
  int cls = MPI_ERR_OTHER;
  MPI_Error_class(rc, &cls);
  if (cls == MPI_ERR_NO_SPACE) return "no space left on the device";
  if (cls == MPI_ERR_QUOTA) return "disk quota exceeded";
  if (cls == MPI_ERR_IO) return "I/O error (or the file grew beyond what the file system allows)";
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return std::string(text, static_cast<std::size_t>(len));
}
}  // namespace

NpyOutput::~NpyOutput() = default;  // the temporary removes itself unless committed

template <class T>
void NpyOutput::write(const DistMatrix<T>& M) {
  const std::string header = make_npy_header(dtype_of<T>(), M.rows, M.cols, true);
  std::vector<std::pair<index_t, index_t>> seg;
  if (!M.piece.empty())
    for (const Run& c : M.piece.col_runs)
      for (index_t j = c.global; j < c.global + c.length; ++j)
        for (const Run& r : M.piece.row_runs) seg.push_back({j * M.rows + r.global, r.length});
  FileView view(mpi_type<T>(), seg);
  // Every rank removes it on a signal (unlinking twice is harmless); MPI-IO opens its short
  // name in the output's directory.
  tmp_->arm();
  InDirectory in(tmp_->dir());
  if (comm_.any(!in.ok()))
    throw OutputError(path_ + ": cannot enter its directory '" + dir_name(path_) + "' to write it");
  MpiFile f;
  int rc;
  {
    HoldEndingSignals hold;
    rc = MPI_File_open(comm_.get(), tmp_->name().c_str(), MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_WRONLY,
                       MPI_INFO_NULL, &f.fh);
  }
  int cls = MPI_SUCCESS;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
  if (comm_.any(cls == MPI_ERR_FILE_EXISTS)) tmp_->forget();  // MPI_MODE_EXCL: not ours to remove
  std::string err = comm_.first_error(rc == MPI_SUCCESS ? "" : path_ + ": cannot create the output: " + io_cause(rc));
  if (!err.empty()) throw OutputError(err);
  // Every write's count is checked, then the file is closed, synced and its size compared
  // with what the header promises: a full disk shows up as one of these, never as a short file.
  std::string mine;
  if (comm_.rank() == 0) {
    MPI_Status st;
    rc = MPI_File_write_at(f.fh, 0, header.data(), static_cast<int>(header.size()), MPI_CHAR, &st);
    int got = 0;
    if (rc == MPI_SUCCESS) MPI_Get_count(&st, MPI_CHAR, &got);
    if (rc != MPI_SUCCESS) mine = io_cause(rc);
    else if (got != static_cast<int>(header.size())) mine = "short write (no space left on the device?)";
  }
  MPI_File_set_view(f.fh, static_cast<MPI_Offset>(header.size()), mpi_type<T>(), view.get(), "native",
                    MPI_INFO_NULL);
  const int want = mpi_count(M.piece.empty() ? 0 : M.local.size());
  MPI_Status st;
  rc = MPI_File_write_all(f.fh, M.local.data(), want, mpi_type<T>(), &st);
  int got = 0;
  if (rc == MPI_SUCCESS) MPI_Get_count(&st, mpi_type<T>(), &got);
  if (mine.empty() && rc != MPI_SUCCESS) mine = io_cause(rc);
  else if (mine.empty() && got != want) mine = "short write (no space left on the device?)";
  rc = MPI_File_sync(f.fh);
  if (mine.empty() && rc != MPI_SUCCESS) mine = io_cause(rc);
  rc = MPI_File_close(&f.fh);
  if (mine.empty() && rc != MPI_SUCCESS) mine = io_cause(rc);
  if (comm_.rank() == 0 && mine.empty()) {
    // The kernel may report a full disk only at fsync, and the size must be what was promised.
    const double expect = double(header.size()) + double(M.rows) * double(M.cols) * sizeof(T);
    int fd = ::openat(tmp_->dir(), tmp_->name().c_str(), O_RDONLY | O_CLOEXEC);
    struct stat fs;
    if (fd < 0) mine = std::string("cannot reopen the written file: ") + std::strerror(errno);
    else if (::fsync(fd) != 0) mine = std::strerror(errno);
    else if (fstat(fd, &fs) != 0 || double(fs.st_size) != expect) {
      struct statvfs vfs;
      const bool full = fstatvfs(fd, &vfs) == 0 && double(vfs.f_bavail) * vfs.f_frsize < expect - double(fs.st_size);
      mine = std::string(full ? "no space left on the device" : "short write") + " (the file has " +
             std::to_string(static_cast<long long>(fs.st_size)) + " of its " +
             std::to_string(static_cast<long long>(expect)) + " bytes)";
    }
    if (fd >= 0) ::close(fd);
  }
  err = comm_.first_error(mine.empty() ? "" : path_ + ": writing the output failed: " + mine +
                                                  "; nothing was written to " + path_);
  if (!err.empty()) throw OutputError(err);
}

#define DISTMM_NPY_IO(T)                                                          \
  template void npy_read_piece(const NpyInfo&, Op, DistMatrix<T>&, const Comm&); \
  template void NpyOutput::write(const DistMatrix<T>&);
DISTMM_FOR_EACH_TYPE(DISTMM_NPY_IO)
#undef DISTMM_NPY_IO

void NpyOutput::commit() {
  comm_.agree(comm_.rank() == 0 ? tmp_->commit() : "", true);
}

}  // namespace distmm
