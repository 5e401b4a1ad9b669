// The sequential engine's trials on threads, shared by averaging
// (run/sequential.hpp) and training (sgd/sequential_trainer.hpp): each trial is a
// pure function of its index, so the records do not depend on the thread count.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <vector>

#include "run/observer.hpp"

namespace avb {

// Runs `run_trial(k, &stop)` or `run_trial(k, &stop, &done_work)` (returning trial k's
// record; the second form adds each round or step it runs to `done_work`, for progress
// within a trial) for k in [0, trials) on
// up to `threads` threads (at least 1). On the calling thread, the observer
// receives each trial's rows and then the trial, in trial order, and the records
// are appended to `records`. When the observer asks to stop, `stop` is set: trials
// in flight end early (marked incomplete by run_trial) and no new trial starts.
// The first exception of a trial is re-thrown here once the workers are joined.
// Returns whether the run was stopped.
// The state the workers and the reporting thread share.
template <class Record>
struct TrialQueue {
  // Trials finished but not yet reported, by index. A worker runs at most `window`
  // trials ahead of the reporting, so memory does not grow with the trial count.
  std::map<int, Record> done;
  int reported = 0, window = 2, active = 0;
  bool closed = false;  // the reporting ended: no trial is wanted any more
  std::exception_ptr failure;
  std::mutex mutex;
  std::condition_variable ready, room;
  std::atomic<int> next{0};
  std::atomic<bool> stop{false};
  std::atomic<long long> done_work{0};  // rounds (steps) every trial has run so far: progress within a trial

  // Sets the stop flag under the mutex (so no waiting worker misses it) and wakes all.
  void request_stop() {
    {
      const std::lock_guard lock(mutex);
      stop = true;
    }
    room.notify_all();
  }

  // A worker: claims trials in order and runs them while there is room.
  template <class RunTrial>
  void work(int trials, RunTrial& run_trial) {
    for (int k = next++; k < trials && !stop; k = next++) {
      {
        std::unique_lock lock(mutex);
        room.wait(lock, [&] { return k < reported + window || stop || closed; });
        if (stop || closed) break;
      }
      try {
        Record record = [&] {
          if constexpr (std::is_invocable_v<RunTrial&, int, const std::atomic<bool>*, std::atomic<long long>*>)
            return run_trial(k, static_cast<const std::atomic<bool>*>(&stop), &done_work);
          else
            return run_trial(k, static_cast<const std::atomic<bool>*>(&stop));
        }();
        const std::lock_guard lock(mutex);
        done.emplace(k, std::move(record));
      } catch (...) {
        const std::lock_guard lock(mutex);
        if (!failure) failure = std::current_exception();
        stop = true;
      }
      ready.notify_all();
      room.notify_all();
    }
    const std::lock_guard lock(mutex);
    --active;
    ready.notify_all();
  }

  // The reporting thread: trial k's record once it is done, polling `stop_wanted`
  // while it waits so that a stop request ends a long trial in flight, and telling
  // `progress` the work done so far; nothing when it will never come (the run was
  // stopped, or a worker failed).
  template <class StopWanted, class Progress>
  std::optional<Record> take(int k, StopWanted&& stop_wanted, Progress&& progress) {
    std::unique_lock lock(mutex);
    while (!done.contains(k) && active > 0) {
      ready.wait_for(lock, std::chrono::milliseconds(20));
      progress(done_work.load(std::memory_order_relaxed));
      if (!stop && stop_wanted()) {
        stop = true;
        room.notify_all();
      }
    }
    const auto found = done.find(k);
    if (found == done.end()) return std::nullopt;
    Record record = std::move(found->second);
    done.erase(found);
    ++reported;
    lock.unlock();
    room.notify_all();
    return record;
  }

  void close() {
    {
      const std::lock_guard lock(mutex);
      closed = true;  // workers waiting for room give up
    }
    room.notify_all();
  }
};

template <class Record, class Row, class RunTrial>
bool run_trials_on_threads(int trials, int threads, RunObserver<Record, Row>& observer, std::vector<Record>& records,
                           RunTrial&& run_trial) {
  const int workers = std::clamp(threads, 1, std::max(trials, 1));
  TrialQueue<Record> queue;
  queue.window = 2 * workers;
  queue.active = workers;
  std::vector<std::jthread> pool;
  for (int w = 0; w < workers; ++w) pool.emplace_back([&] { queue.work(trials, run_trial); });
  for (int k = 0; k < trials; ++k) {
    std::optional<Record> record =
        queue.take(k, [&] { return observer.stop_requested(); }, [&](long long done) { observer.on_progress(done); });
    if (!record || record->rows.empty()) break;  // never started, or stopped during its set-up
    for (const Row& row : record->rows) observer.on_row(*record, row);
    observer.on_trial(*record);
    const bool whole = record->complete;
    if (!observer.keeps_records()) records.clear();
    records.push_back(std::move(*record));
    // As on the MPI engines only the last trial reported may be cut short: trials
    // after it, finished or not, are left out.
    if (!whole) break;
    if (!queue.stop && observer.stop_requested()) queue.request_stop();
  }
  queue.close();
  pool.clear();  // joins the workers
  if (queue.failure) std::rethrow_exception(queue.failure);
  return queue.stop;
}

}  // namespace avb
