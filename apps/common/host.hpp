// Where a program's output goes and what asks it to stop. Without a host, the
// process's own: the table on stdout, error, warning and progress lines on stderr,
// SIGTERM and SIGINT as stop requests. A host that embeds the programs (the Python
// module avbench._engine, apps/python_engine.cpp) takes all of them instead, and a
// run that cannot go on throws HostedExit rather than ending the process.
#pragma once

#include <cstdio>
#include <string>

namespace avb::app {

class Host {
 public:
  virtual ~Host() = default;
  // One error or warning line (`kind` "error" or "warning"), without the program's prefix.
  virtual void report(const char* kind, const std::string& line) = 0;
  // The share of the run's work done (0 to 1), and what it is ("trial 3/20, round 40/100").
  virtual void progress(double done, const std::string& detail) = 0;
  // Where the table (header, rows, means) is printed.
  virtual std::FILE* table() = 0;
};

// The host of the programs run in this process; nullptr (the default) for the process itself.
void set_host(Host* host);
Host* host();

// The table's stream: the host's, else stdout, or stderr once stdout carries the
// summary (--summary -).
std::FILE* table_out();
void table_to_stderr(bool yes);

// What abort_run throws under a host: the exit code the process would have ended with.
struct HostedExit {
  int code;
};

// A stop request as a signal would make it (a host's interrupt), and its reset
// before the next run of the same process.
void request_stop(int signo);
void clear_stop();

}  // namespace avb::app
