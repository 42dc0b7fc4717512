// JSON lines: the --json files of `run`, `engine-bench` and `gpu-bench`.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace distmm {

// Appends one line; the line is written whole with one write, never a fragment.
void append_json_line(const std::string& path, const nlohmann::json& j);
std::string iso_time_now();  // "2026-11-23T07:36:22Z"

}  // namespace distmm
