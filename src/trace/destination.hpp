// The final step of TraceWriter::finish (trace.cpp, internal); the check of a
// destination, check_trace_destination, is declared in trace.hpp.
#pragma once

#include <filesystem>

#include "trace/trace.hpp"

namespace avb {

// Renames a finished trace from `tmp` to `path` without replacing anything but a
// regular file, and without replacing anything at all unless `overwrite`; throws
// TraceError, saying where the trace was left, when it cannot.
void move_into_place(const std::filesystem::path& tmp, const std::filesystem::path& path, bool overwrite);

}  // namespace avb
