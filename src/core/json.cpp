#include "json.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "types.hpp"

namespace distmm {

void append_json_line(const std::string& path, const nlohmann::json& j) {
  std::string line = j.dump() + "\n";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0)
    throw UsageError("cannot open --json file '" + path + "': " + std::strerror(errno) +
                     ": choose a writable path");
  ssize_t w = ::write(fd, line.data(), line.size());
  ::close(fd);
  if (w != static_cast<ssize_t>(line.size()))
    throw UsageError("could not append to --json file '" + path + "': disk full?");
}

std::string iso_time_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace distmm
