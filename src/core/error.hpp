// Error types of avbench. Library code reports every problem by throwing one of
// these; only the apps turn them into messages and exit codes.
#pragma once

#include <atomic>
#include <stdexcept>
#include <string>

namespace avb {

// Base of every avbench error: the message is meant for a user and names what to fix.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A bad option value or an inconsistent combination of options.
class ConfigError : public Error {
 public:
  using Error::Error;
};

// An MPI call that returned an error code; the message names the call.
class MpiError : public Error {
 public:
  MpiError(const std::string& call, int code);
  int code() const { return code_; }

 private:
  int code_;
};

// Thrown, not an error: a long loop of the sequential engine (a round over
// millions of peers, a graph or an sgd problem being built) saw its stop flag set
// (SIGTERM, SIGINT). The runner drops what was half done and ends the trial, or
// the set-up, cut short.
struct StopRequested {};

// Polls `stop` (null: never stops): throws StopRequested once it is set.
inline void check_stop(const std::atomic<bool>* stop) {
  if (stop != nullptr && stop->load(std::memory_order_relaxed)) throw StopRequested{};
}

// An HDF5 or file-system failure while writing or reading a trace.
class TraceError : public Error {
 public:
  using Error::Error;
};

}  // namespace avb
