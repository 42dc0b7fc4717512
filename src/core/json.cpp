#include "json.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>


namespace distmm {

PathProblem json_file_problem(const std::string& path) {
  return path.empty() || path == "-" ? PathProblem{} : output_problem(path, "--json", true);
}

void append_json_line(const std::string& path, const nlohmann::json& j) {
  if (PathProblem p = json_file_problem(path)) p.raise();
  std::string line = j.dump() + "\n";
  // O_NONBLOCK: a FIFO put there since the check fails to open rather than waits for a reader.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0)
    throw OutputError("cannot open --json file '" + path + "': " + std::strerror(errno) + ": choose a writable path");
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw UsageError("--json " + path + " is " + file_kind(st.st_mode) + ": give a regular file path");
  }
  ssize_t w = ::write(fd, line.data(), line.size());
  ::close(fd);
  if (w != static_cast<ssize_t>(line.size()))
    throw OutputError("could not append to --json file '" + path + "': disk full?");
}

std::string iso_time_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace distmm
