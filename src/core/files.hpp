// Paths distmm reads and writes, checked before they are used. Only regular files are read: a
// FIFO would block every rank. An output replaces only a regular file (or nothing): the rename
// that makes it visible would destroy a device node, a FIFO or a socket. Anything else is refused
// at once with one line naming the path and the fix.
#pragma once
#include <sys/types.h>

#include <optional>
#include <string>

#include "types.hpp"

namespace distmm {

std::string dir_name(const std::string& path);   // "a/b.npy" -> "a", "b.npy" -> ".", "/b" -> "/"
std::string base_name(const std::string& path);  // "a/b.npy" -> "b.npy"

// What stat found, in words: "a directory", "a FIFO", "a character device", ...
std::string file_kind(mode_t mode);

// Opens `path` for reading, never blocking on a FIFO or a device: a regular file only, else a
// UsageError "<what> PATH is a FIFO: give a regular file". Returns the descriptor.
int open_input(const std::string& path, const std::string& what);
// The whole of a small input (the machine and tuning files) through open_input; none where the
// path is empty or nothing is there.
std::optional<std::string> read_if_present(const std::string& path, const std::string& what);

// A problem with a path: the user's (exit 2) or an output that cannot be written (exit 1).
struct PathProblem {
  std::string message;
  bool unwritable = false;  // permission or a read-only file system: OutputError
  explicit operator bool() const { return !message.empty(); }
  [[noreturn]] void raise() const;
};

// What `f` threw as a UsageError or an OutputError, for rank 0 to share with Comm::agree.
template <class F>
PathProblem caught(F&& f) {
  try {
    f();
  } catch (const OutputError& e) {
    return {e.what(), true};
  } catch (const UsageError& e) {
    return {e.what()};
  }
  return {};
}

// Why `path` cannot take the output `what` ("--out", "--json", "the machine file"); none when
// it can: its directory exists and is writable, and whatever is at the path is a regular file
// (writable itself where it is `appended` to rather than replaced).
PathProblem output_problem(const std::string& path, const std::string& what, bool appended = false);

// The temporary beside an output, made visible only by commit's rename. A short name, since
// Open MPI's MPI-IO components copy the name they open into 256-byte buffers, and the same on
// every rank when rank 0's name is given. From arm() on, every signal that would end the process
// (SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE, SIGALRM, SIGUSR1/2, ...) removes it first; the
// destructor removes it unless committed.
class TemporaryFile {
 public:
  explicit TemporaryFile(const std::string& path, std::string name = "");
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
  ~TemporaryFile();
  static std::string make_name(const std::string& path);  // ".<name>.tmp.<pid>.<time>"
  const std::string& name() const { return name_; }
  int dir() const { return dir_; }  // the output's directory (-1: it could not be opened)
  void arm();                       // from now on signals remove it
  void forget();                    // it was never created: nothing to remove
  // Renames it over the output, rechecking what is there; the error, or "" when done.
  std::string commit();

 private:
  std::string path_, name_;
  int dir_ = -1;
  bool armed_ = false, committed_ = false;
};

// Runs the scope in `dir` (a descriptor): MPI-IO then opens a short name relative to it, however
// long the directory's path. Restores the working directory.
class InDirectory {
 public:
  explicit InDirectory(int dir);
  explicit InDirectory(const std::string& dir);  // by path: opens it for the scope
  InDirectory(const InDirectory&) = delete;
  InDirectory& operator=(const InDirectory&) = delete;
  ~InDirectory();
  bool ok() const { return ok_; }

 private:
  void enter(int dir);
  int saved_ = -1, owned_ = -1;
  bool ok_ = false;
};

// Holds the signals that would end the process while MPI-IO opens a file: Open MPI's components
// create and remove files of their own beside it (a lock test), which a signal would leave
// behind. One that comes meanwhile removes the temporary at once and ends the process when the
// scope ends.
class HoldEndingSignals {
 public:
  HoldEndingSignals();
  HoldEndingSignals(const HoldEndingSignals&) = delete;
  HoldEndingSignals& operator=(const HoldEndingSignals&) = delete;
  ~HoldEndingSignals();
};

// Replaces `path` with `text` atomically (a temporary beside it, synced, renamed), after
// output_problem's checks; throws UsageError or OutputError naming `what`.
void write_file_atomically(const std::string& path, const std::string& text, const std::string& what);

// distmm's per-user file <leaf> (machine.json, tuning.json): `setting` (the environment variable
// that names it) where set, else HOME/.cache/distmm/<leaf>; empty where HOME is unset or empty
// (there is then none to read). Null pointers read as unset (getenv's).
std::string user_file_path(const char* setting, const char* home, const std::string& leaf);
// The same for writing: without `setting`, HOME must be an existing directory, never created;
// .cache/distmm below it is made where missing. Else a UsageError: set HOME, or `instead`.
std::string user_file_path_for_writing(const char* setting, const char* home, const std::string& leaf,
                                       const std::string& instead);

}  // namespace distmm
