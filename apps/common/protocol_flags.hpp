// The flags that choose and tune a protocol and its failures, shared by
// averaging_bench and sgd_bench so that both read them alike.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "protocols/protocol.hpp"
#include "sim/failures.hpp"
#include "sim/stragglers.hpp"

namespace avb::app {

// Every value is kept as text and converted by the functions below, so that every
// refusal is one line that starts with the flag and says what is accepted
// (CLI11's own messages name neither).
struct ProtocolFlags {
  std::string protocol = "allreduce";
  std::string fail_rate = "0";
  std::string failure = "transient";
  std::string join_rate = "0";
  std::string stragglers = "0";
  std::string straggler_slowdown = "4";
  std::string detection_timeout = "0";
  std::string round_timeout = "300";
  std::string on_failure = "default";
  std::string collective = "auto";
  std::string grid = "default";
  std::string placement = "random";
  std::string key_update = "axis";
  std::string group_size = "32";
  std::string min_group_size = "2";
  std::string topology = "default";
  std::string weights = "uniform";
  std::string alive_weights = "renormalize";
  std::string mode = "blocking";
  std::string clock = "round";
  std::string gamma = "1";
  std::string quantizer = "none";
  std::string lattice_q = "65536";
  std::string lattice_eps = "0.00048828125";  // kDefaultLatticeEps, 2^-11 (protocols/compress.hpp)
};

void add_protocol_flags(CLI::App& app, ProtocolFlags& flags);

// The protocol's options (unresolved), the failure rate and kind.
ProtocolOptions protocol_options(const ProtocolFlags& flags);
double fail_rate(const ProtocolFlags& flags);
FailureKind failure_kind(const ProtocolFlags& flags);
StragglerSpec straggler_spec(const ProtocolFlags& flags);
double detection_timeout(const ProtocolFlags& flags);
double round_timeout(const ProtocolFlags& flags);
double join_rate(const ProtocolFlags& flags);

// A flag that does not apply to the chosen protocol is refused rather than
// silently ignored (the run would not be the one the user asked for). A default
// value is let through: a trace's recorded config lists every flag, and must replay.
void refuse_foreign_flags(const ProtocolFlags& flags, const std::string& protocol);

}  // namespace avb::app
