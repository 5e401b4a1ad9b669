// avbench._engine: averaging_bench and sgd_bench in a Python process, on the
// sequential engine (python/avbench/api.py calls run()). The program runs in a
// thread of its own with the GIL released; the calling thread wakes every
// kPollInterval to hand the newest progress to a Python callback and to let
// Python's signal handlers run, so that Ctrl-C (Jupyter's interrupt) stops the run
// after its round, as SIGINT stops the program, and the KeyboardInterrupt is
// raised once the trace is closed (complete = 0).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/host.hpp"
#include "common/programs.hpp"

namespace py = pybind11;

namespace {

constexpr std::chrono::milliseconds kPollInterval{50};

// What a run reports, kept for the calling thread to pass on to Python.
class PythonHost final : public avb::app::Host {
 public:
  PythonHost() : table_(open_memstream(&text_, &size_)) {
    if (table_ == nullptr) throw std::bad_alloc();
  }
  ~PythonHost() override {
    std::fclose(table_);
    std::free(text_);
  }
  PythonHost(const PythonHost&) = delete;
  PythonHost& operator=(const PythonHost&) = delete;

  void report(const char* kind, const std::string& line) override {
    const std::lock_guard lock(mutex_);
    lines_.emplace_back(kind, line);
  }
  void progress(double done, const std::string& detail) override {
    const std::lock_guard lock(mutex_);
    progress_ = {done, detail};
  }
  std::FILE* table() override { return table_; }

  // The newest progress since the last call, if any.
  std::optional<std::pair<double, std::string>> take_progress() {
    const std::lock_guard lock(mutex_);
    return std::exchange(progress_, std::nullopt);
  }
  std::vector<std::pair<std::string, std::string>> lines() {
    const std::lock_guard lock(mutex_);
    return lines_;
  }
  std::string table_text() {
    std::fflush(table_);
    return {text_, size_};
  }

 private:
  std::mutex mutex_;
  std::vector<std::pair<std::string, std::string>> lines_;
  std::optional<std::pair<double, std::string>> progress_;
  char* text_ = nullptr;
  std::size_t size_ = 0;
  std::FILE* table_;
};

// The host and the stop flag belong to the process: one run at a time.
std::mutex g_one_run;

using Body = int (*)(int, char**);

// The program's exit code, run on a thread of its own under `host`; the calling
// thread (which holds no GIL here) polls Python every kPollInterval through `poll`.
template <class Poll>
int run_hosted(Body body, std::vector<std::string> args, PythonHost& host, Poll poll) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::lock_guard one(g_one_run);
  avb::app::clear_stop();
  avb::app::set_host(&host);
  int code = 1;
  std::mutex m;
  std::condition_variable ended;
  bool finished = false;
  std::thread worker([&] {
    try {
      code = body(static_cast<int>(args.size()), argv.data());
    } catch (const avb::app::HostedExit& e) {
      code = e.code;
    } catch (const std::exception& e) {
      host.report("error", e.what());
    }
    const std::lock_guard lock(m);
    finished = true;
    ended.notify_one();
  });
  for (;;) {
    std::unique_lock lock(m);
    if (ended.wait_for(lock, kPollInterval, [&] { return finished; })) break;
    lock.unlock();
    poll();
  }
  worker.join();
  avb::app::set_host(nullptr);
  return code;
}

// run(program, args, progress) -> (exit code, [(kind, line)], table text).
py::tuple run(const std::string& program, const std::vector<std::string>& args, const py::object& progress) {
  Body body = program == "averaging_bench" ? avb::app::averaging_program
              : program == "sgd_bench"     ? avb::app::training_program
                                           : nullptr;
  if (body == nullptr) throw py::value_error("program " + program + " is not averaging_bench or sgd_bench");
  std::vector<std::string> argv{program};
  argv.insert(argv.end(), args.begin(), args.end());
  PythonHost host;
  std::optional<py::error_already_set> interrupted;  // Ctrl-C, or an exception from `progress`
  // With the GIL: the newest progress to the callback, then Python's signal handlers.
  auto poll = [&] {
    const py::gil_scoped_acquire gil;
    if (interrupted) return;
    try {
      if (auto p = host.take_progress(); p && !progress.is_none()) progress(p->first, p->second);
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    } catch (py::error_already_set& e) {
      interrupted.emplace(std::move(e));
      avb::app::request_stop(SIGINT);
    }
  };
  int code = 1;
  {
    const py::gil_scoped_release released;
    code = run_hosted(body, std::move(argv), host, poll);
  }
  if (interrupted) throw std::move(*interrupted);
  if (auto p = host.take_progress(); p && !progress.is_none()) progress(p->first, p->second);
  return py::make_tuple(code, host.lines(), host.table_text());
}

}  // namespace

PYBIND11_MODULE(_engine, m) {
  m.doc() = "averaging_bench and sgd_bench in this process, on the sequential engine (avbench.run)";
  m.def("run", &run, py::arg("program"), py::arg("args"), py::arg("progress") = py::none(),
        "Runs the program with the flags `args`; returns (exit code, [(kind, line)], table text). "
        "`progress(done, detail)` is called with the share of the work done; Ctrl-C stops the run after its "
        "round and is raised once its trace is closed.");
}
