// Ranks launched with different arguments (an MPMD launch, `mpirun -np 2 distmm run ... : -np 2
// distmm run ...`, or another environment on some nodes) would each follow their own options
// into collectives of other shapes: a hang, a crash inside MPI, or a wrong product that passes.
// So before any collective that options shape, the ranks compare what they parsed, once.
#include <mpi.h>
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "../../mpi/runtime/comm.hpp"
#include "../core/settings.hpp"
#include "commands.hpp"

namespace distmm {

namespace {

// A field's text on one line: the canonical form joins fields with newlines.
std::string one_line(std::string s) {
  for (std::size_t i = 0; (i = s.find('\n', i)) != std::string::npos; i += 2) s.replace(i, 1, "\\n");
  return s;
}

// The input file's identity as this rank sees it: its size and modification time.
std::string file_identity(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return path + " (missing)";
  return path + " (" + std::to_string(st.st_size) + " bytes, modified " + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec) + ")";
}

// A value in a message: markers such as "(not given)" as they are, values in quotes.
std::string quoted(const std::string& v) { return !v.empty() && v[0] == '(' ? v : "'" + v + "'"; }

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> v;
  std::size_t at = 0;
  for (std::size_t nl; (nl = s.find('\n', at)) != std::string::npos; at = nl + 1) v.push_back(s.substr(at, nl - at));
  return v;
}

}  // namespace

LaunchFields launch_fields(const CLI::App& app, const std::vector<std::string>& input_files) {
  LaunchFields f;
  for (const CLI::App* sub : app.get_subcommands()) {
    f.push_back({"command", sub->get_name()});
    for (const CLI::Option* o : sub->get_options()) {
      std::string value;
      for (const std::string& r : o->results()) value += (value.empty() ? "" : ",") + r;
      const bool file = std::find(input_files.begin(), input_files.end(), o->get_name()) != input_files.end();
      f.push_back({o->get_name(), o->count() == 0 ? "(not given)" : file ? file_identity(value) : value});
    }
  }
  for (const std::string& name : setting_names()) {
    const char* v = environment(name.c_str());
    f.push_back({name, v ? v : "(unset)"});
  }
  return f;
}

void agree_on_launch(const LaunchFields& fields) {
  std::string canonical;
  for (const auto& [name, value] : fields) canonical += one_line(name) + "=" + one_line(value) + "\n";
  // The largest hash and the largest complement: equal on every rank only when all hashes are.
  const std::uint64_t h = fnv1a(canonical);
  unsigned long long most[2] = {h, ~h};
  MPI_Allreduce(MPI_IN_PLACE, most, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  if (most[0] == ~most[1]) return;

  // They differ: rank 0 gathers every rank's fields (only now) and names the first difference.
  int rank = 0, P = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  int len = static_cast<int>(canonical.size());
  std::vector<int> lens(rank == 0 ? P : 0), offsets(rank == 0 ? P : 0);
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string all;
  if (rank == 0) {
    long long total = 0;
    for (int r = 0; r < P; ++r) offsets[r] = static_cast<int>(total), total += lens[r];
    all.resize(static_cast<std::size_t>(total));
  }
  MPI_Gatherv(canonical.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  std::string message;
  if (rank == 0) {
    const std::vector<std::string> mine = split_lines(canonical);
    for (int r = 1; r < P && message.empty(); ++r) {
      const std::vector<std::string> theirs = split_lines(all.substr(offsets[r], lens[r]));
      for (std::size_t i = 0; i < std::max(mine.size(), theirs.size()); ++i) {
        const std::string a = i < mine.size() ? mine[i] : "(nothing)", b = i < theirs.size() ? theirs[i] : "(nothing)";
        if (a == b) continue;
        const std::size_t ea = a.find('='), eb = b.find('=');
        const std::string other = " on rank " + std::to_string(r);
        message = a.substr(0, ea) == b.substr(0, eb)
                      ? "the ranks were launched with different options: " + a.substr(0, ea) + " is " +
                            quoted(a.substr(ea + 1)) + " on rank 0 but " + quoted(b.substr(eb + 1)) + other
                      : "the ranks were launched with different command lines: " + a + " on rank 0 but " + b + other;
        message += ": launch every rank with the same command line, environment and input files";
        break;
      }
    }
    if (message.empty()) message = "the ranks were launched with different command lines: launch every rank alike";
  }
  Comm::world().agree(message);
}

}  // namespace distmm
