#include "files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <ctime>
#include <iterator>

#include "types.hpp"

namespace distmm {

std::string dir_name(const std::string& p) {
  const auto s = p.find_last_of('/');
  return s == std::string::npos ? "." : (s == 0 ? "/" : p.substr(0, s));
}

std::string base_name(const std::string& p) {
  const auto s = p.find_last_of('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

std::string file_kind(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

namespace {

std::string labelled(const std::string& what, const std::string& path) {
  return what.empty() ? path : what + " " + path;
}

// ENAMETOOLONG and the like, in words that name the limit.
std::string stat_failure(int err) {
  if (err == ENAMETOOLONG)
    return "the path is too long for the file system (at most " + std::to_string(PATH_MAX - 1) +
           " characters, each name at most " + std::to_string(NAME_MAX) + ")";
  if (err == ENOTDIR) return "a component of the path is not a directory";
  return std::strerror(err);
}

}  // namespace

int open_input(const std::string& path, const std::string& what) {
  const std::string name = labelled(what, path);
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    throw UsageError(name + ": " + (errno == ENOENT ? "no such file: check the path" : stat_failure(errno)));
  if (!S_ISREG(st.st_mode)) throw UsageError(name + " is " + file_kind(st.st_mode) + ": give a regular file");
  // O_NONBLOCK: were the file swapped for a FIFO since the stat, open would wait for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw UsageError(name + " cannot be read: " + std::strerror(errno));
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw UsageError(name + " is " + file_kind(st.st_mode) + ": give a regular file");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

std::optional<std::string> read_if_present(const std::string& path, const std::string& what) {
  struct stat st;
  if (path.empty() || (::stat(path.c_str(), &st) != 0 && errno == ENOENT)) return std::nullopt;
  const int fd = open_input(path, what);
  std::string text;
  char buf[65536];
  ssize_t got;
  while ((got = ::read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(got));
  const int err = errno;
  ::close(fd);
  if (got < 0) throw UsageError(labelled(what, path) + " cannot be read: " + std::strerror(err));
  return text;
}

void PathProblem::raise() const {
  if (unwritable) throw OutputError(message);
  throw UsageError(message);
}

PathProblem output_problem(const std::string& path, const std::string& what, bool appended) {
  const std::string name = labelled(what, path), dir = dir_name(path);
  if (path.empty() || path.back() == '/') return {name + " names a directory: give a file name"};
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) return {name + " is " + file_kind(st.st_mode) + ": give a regular file path"};
    if (appended && ::access(path.c_str(), W_OK) != 0)
      return {name + " is not writable (" + std::strerror(errno) + "): choose a writable path", true};
  } else if (errno != ENOENT) {
    return {name + ": " + stat_failure(errno)};
  }
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return {name + ": directory '" + dir + "' does not exist: create it or choose another path"};
  // As root too: access reports a read-only file system (EROFS).
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return {name + ": directory '" + dir + "' is not writable (" + std::strerror(errno) + "): choose another path",
            true};
  return {};
}

namespace {

// The temporary that a signal removes: a directory descriptor and a name prepared beforehand, so
// that the handler only calls unlinkat (async-signal-safe) whatever the working directory.
volatile std::sig_atomic_t pending_dir = -1;
char pending_name[NAME_MAX + 1];
// A signal that came while they were held (HoldEndingSignals), which ends the process when the
// hold ends.
volatile std::sig_atomic_t holding = 0, held = 0;
// Signals whose default action ends the process; the handler replaces only the default action
// (one that is ignored or handled elsewhere does not end it).
constexpr int kEndingSignals[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGTERM, SIGPIPE,   SIGALRM,
                                  SIGUSR1, SIGUSR2, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF};
bool replaced[std::size(kEndingSignals)];
int handler_users = 0;  // armed temporaries and holds: the handler stays while any needs it

extern "C" void remove_pending_then_end(int sig) {
  // At once, even while held: the job may be torn down (mpirun gone) before the hold ends.
  if (pending_dir >= 0) ::unlinkat(pending_dir, pending_name, 0);
  if (holding) {
    held = sig;
    return;
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);  // delivered with the default action once this handler returns
}

void install_handler() {
  if (handler_users++ > 0) return;
  for (std::size_t i = 0; i < std::size(kEndingSignals); ++i) {
    struct sigaction now {};
    ::sigaction(kEndingSignals[i], nullptr, &now);
    replaced[i] = now.sa_handler == SIG_DFL && !(now.sa_flags & SA_SIGINFO);
    if (!replaced[i]) continue;
    struct sigaction sa {};
    sa.sa_handler = remove_pending_then_end;
    sigemptyset(&sa.sa_mask);
    ::sigaction(kEndingSignals[i], &sa, nullptr);
  }
}

void uninstall_handler() {
  if (--handler_users > 0) return;
  for (std::size_t i = 0; i < std::size(kEndingSignals); ++i)
    if (replaced[i]) ::signal(kEndingSignals[i], SIG_DFL), replaced[i] = false;
}

void arm_pending(int dir, const std::string& name) {
  std::snprintf(pending_name, sizeof pending_name, "%s", name.c_str());
  pending_dir = dir;
  install_handler();
}

void disarm_pending() {
  pending_dir = -1;
  uninstall_handler();
}

}  // namespace

HoldEndingSignals::HoldEndingSignals() {
  install_handler();
  holding = 1;
}

HoldEndingSignals::~HoldEndingSignals() {
  holding = 0;
  if (held) remove_pending_then_end(held);  // ends the process
  uninstall_handler();
}

TemporaryFile::TemporaryFile(const std::string& path, std::string name)
    : path_(path), name_(name.empty() ? make_name(path) : std::move(name)) {
  dir_ = ::open(dir_name(path).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
}

TemporaryFile::~TemporaryFile() {
  if (armed_ && !committed_ && dir_ >= 0) ::unlinkat(dir_, name_.c_str(), 0);
  if (armed_) disarm_pending();
  if (dir_ >= 0) ::close(dir_);
}

std::string TemporaryFile::make_name(const std::string& path) {
  // A prefix of the output's name says whose it is; pid and time make it unique on the host.
  return "." + base_name(path).substr(0, 40) + ".tmp." + std::to_string(::getpid()) + "." +
         std::to_string(static_cast<long long>(std::time(nullptr)));
}

void TemporaryFile::arm() {
  if (dir_ < 0) return;
  arm_pending(dir_, name_);
  armed_ = true;
}

void TemporaryFile::forget() {
  if (armed_) disarm_pending();
  armed_ = false;
}

std::string TemporaryFile::commit() {
  if (dir_ < 0) return path_ + ": its directory could not be opened";
  // What is there may have changed since the first check; rename would replace anything.
  struct stat st;
  const std::string base = base_name(path_);
  if (::fstatat(dir_, base.c_str(), &st, 0) == 0 && !S_ISREG(st.st_mode))
    return path_ + " is now " + file_kind(st.st_mode) + ": give a regular file path";
  if (::renameat(dir_, name_.c_str(), dir_, base.c_str()) != 0)
    return path_ + ": could not move the finished output into place: " + std::strerror(errno);
  committed_ = true;
  const int sync_dir = ::openat(dir_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (sync_dir >= 0) ::fsync(sync_dir), ::close(sync_dir);
  return "";
}

InDirectory::InDirectory(int dir) { enter(dir); }

InDirectory::InDirectory(const std::string& dir) {
  owned_ = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  enter(owned_);
}

void InDirectory::enter(int dir) {
  saved_ = ::open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  ok_ = saved_ >= 0 && dir >= 0 && ::fchdir(dir) == 0;
}

InDirectory::~InDirectory() {
  if (ok_) (void)!::fchdir(saved_);
  if (saved_ >= 0) ::close(saved_);
  if (owned_ >= 0) ::close(owned_);
}

void write_file_atomically(const std::string& path, const std::string& text, const std::string& what) {
  if (PathProblem p = output_problem(path, what)) p.raise();
  TemporaryFile tmp(path);
  tmp.arm();
  const int fd = ::openat(tmp.dir(), tmp.name().c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    tmp.forget();
    throw OutputError(labelled(what, path) + " cannot be written: " + std::strerror(errno));
  }
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t w = ::write(fd, text.data() + done, text.size() - done);
    if (w <= 0) break;
    done += static_cast<std::size_t>(w);
  }
  const int err = errno;
  const bool synced = done == text.size() && ::fsync(fd) == 0;
  ::close(fd);
  if (!synced)
    throw OutputError(labelled(what, path) + " could not be written: " +
                      (done < text.size() ? std::strerror(err) : std::strerror(errno)));
  if (std::string e = tmp.commit(); !e.empty()) throw OutputError(labelled(what, "") + e);
}

std::string user_file_path(const char* setting, const char* home, const std::string& leaf) {
  if (setting && *setting) return setting;
  return home && *home ? std::string(home) + "/.cache/distmm/" + leaf : "";
}

std::string user_file_path_for_writing(const char* setting, const char* home, const std::string& leaf,
                                       const std::string& instead) {
  if (setting && *setting) return setting;
  const std::string h = home ? home : "";
  struct stat st;
  if (h.empty()) throw UsageError("HOME is not set (or empty), so there is no ~/.cache/distmm/" + leaf + ": set HOME, or " + instead);
  if (h[0] != '/') throw UsageError("HOME '" + h + "' is not an absolute path: set HOME to your home directory, or " + instead);
  if (::stat(h.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw UsageError("HOME '" + h + "' is not an existing directory (distmm does not create it): set HOME, or " + instead);
  for (const std::string& dir : {h + "/.cache", h + "/.cache/distmm"})
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
      throw OutputError("cannot create " + dir + ": " + std::strerror(errno) + ": " + instead);
  return user_file_path(nullptr, home, leaf);
}

}  // namespace distmm
