// JSON lines: the --json files of `run`, `engine-bench` and `gpu-bench`.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "files.hpp"

namespace distmm {

// Why `path` cannot take --json lines (before the work; none for "" and "-", standard output):
// a device, FIFO or directory there, a missing or unwritable directory.
PathProblem json_file_problem(const std::string& path);
// Appends one line; the line is written whole with one write, never a fragment.
void append_json_line(const std::string& path, const nlohmann::json& j);
std::string iso_time_now();  // "2026-11-23T07:36:22Z"

}  // namespace distmm
