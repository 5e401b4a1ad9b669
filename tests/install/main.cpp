// Registers dimension-exchange, runs it on every rank (the MPI engine) and on
// rank 0 alone (the sequential engine), and checks what the protocol promises:
// after log2(N) rounds every peer holds the exact mean, and both engines record
// the same rows to the bit. Prints one line and exits 0, or names what failed and
// exits 1.
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "dimension_exchange.hpp"
#include "protocols/registration.hpp"
#include "run/averaging.hpp"
#include "run/sequential.hpp"

namespace {

struct Collect : avb::AveragingObserver {
  std::vector<avb::TrialRecord> trials;
  void on_trial(const avb::TrialRecord& trial) override { trials.push_back(trial); }
};

bool same_rows(const avb::TrialRecord& a, const avb::TrialRecord& b) {
  if (a.rows.size() != b.rows.size()) return false;
  for (std::size_t r = 0; r < a.rows.size(); ++r) {
    const avb::RoundRow &x = a.rows[r], &y = b.rows[r];
    if (x.variance != y.variance || x.error != y.error || x.mean_drift != y.mean_drift || x.alive != y.alive ||
        x.groups != y.groups || x.bytes_sent != y.bytes_sent)
      return false;
  }
  return true;
}

// register_protocol must refuse `row` with an Error saying `why`.
void refused(const avb::ProtocolInfo& row, const std::string& why) {
  try {
    avb::register_protocol(row);
  } catch (const avb::Error& e) {
    if (std::string(e.what()).find(why) != std::string::npos) return;
    throw;
  }
  throw avb::Error("register_protocol accepted a row it should refuse (" + why + ")");
}

// Throws what is wrong with the registry's answers to a protocol of one's own.
void check_registration() {
  const std::size_t rows = avb::protocol_catalog().size();
  avb::register_protocol(external::dimension_exchange_info());  // again: harmless
  if (avb::protocol_catalog().size() != rows) throw avb::Error("registering a row twice added it twice");
  avb::ProtocolInfo row = external::dimension_exchange_info();
  row.name = "gossip";
  refused(row, "already registered");
  row.name = "other";
  row.flags = {"--bogus"};
  refused(row, "not a protocol flag");
  row.flags = {"--topology"};
  refused(row, "default_topology");
  if (avb::protocol_info("dimension-exchange").forms.make == nullptr) throw avb::Error("the row has no factory");
}

// What rank 0 checks: the MPI engine's trials, against the promise and against
// the sequential engine. Returns an empty string when all holds.
std::string check(const avb::AveragingOptions& options, int n, int bits, const std::vector<avb::TrialRecord>& mpi) {
  Collect sequential;
  avb::run_averaging_sequential(options, n, sequential, 1);
  if (mpi.size() != static_cast<std::size_t>(options.trials) || sequential.trials.size() != mpi.size())
    return "trials missing";
  for (std::size_t i = 0; i < mpi.size(); ++i) {
    const auto& rows = mpi[i].rows;
    // rows[r]: after round r (rows[0]: the initial state).
    if (rows.size() != static_cast<std::size_t>(options.rounds) + 1) return "rounds missing";
    if (!(rows[static_cast<std::size_t>(bits - 1)].variance > 0)) return "no variance left to remove in the last round";
    const avb::RoundRow& done = rows[static_cast<std::size_t>(bits)];
    if (done.variance != 0 || !(done.mean_drift < 1e-28))
      return "no exact mean after " + std::to_string(bits) + " rounds (variance " + std::to_string(done.variance) + ")";
    if (done.groups != n / 2) return "expected " + std::to_string(n / 2) + " pairs per round";
    if (!same_rows(mpi[i], sequential.trials[i])) return "the engines disagree in trial " + std::to_string(i);
  }
  return {};
}

int run(int rank, int n) {
  avb::register_protocol(external::dimension_exchange_info());
  check_registration();
  int bits = 0;
  while ((1 << bits) < n) ++bits;
  avb::AveragingOptions options;
  options.protocol.name = "dimension-exchange";
  options.trials = 3;
  options.rounds = bits + 1;
  options.dim = 5;
  options.seed = 11;
  options = avb::resolve(options, n);
  Collect mpi;
  avb::run_averaging(options, MPI_COMM_WORLD, mpi);
  if (rank != 0) return 0;
  const std::string wrong = check(options, n, bits, mpi.trials);
  if (!wrong.empty()) {
    std::fprintf(stderr, "dimension_exchange: %s\n", wrong.c_str());
    return 1;
  }
  std::printf("dimension-exchange: %d peers, %d trials: exact mean after %d rounds, MPI and sequential rows agree\n",
              n, options.trials, bits);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  int status = 1;
  try {
    status = run(rank, n);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dimension_exchange: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return status;
}
