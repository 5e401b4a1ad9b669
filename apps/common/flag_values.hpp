// Strict conversions of flag values: every refusal is one line that starts with
// the flag and says what it accepts.
#pragma once

#include <cstdint>
#include <string>

namespace avb::app {

// Conversions of flag values that throw ConfigError("--flag: 'text' is not ...").
long long parse_integer(const std::string& flag, const std::string& text, long long min, long long max);
double parse_real(const std::string& flag, const std::string& text, const std::string& accepted);
std::uint64_t parse_seed(const std::string& flag, const std::string& text);

// Refuses, with a ConfigError naming `flag`, a run whose peers on this machine
// would need more memory than it has (bytes_per_peer: the app's estimate for
// one peer): better one line now than std::bad_alloc or the OOM killer mid-run.
// Peers on this machine: all of them under SMPI (one process), else the launcher's
// local rank count (OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS), else 1; or
// peers_here when it is given (the sequential engine: every peer, or the peers of
// the trials run at once).
// The peers that share this machine's memory: all of them under SMPI, the local
// rank count under mpirun or srun (OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS),
// else 1; or peers_here when it is > 0.
int peers_on_this_machine(int n_peers, int peers_here);
void check_memory(const std::string& flag, const std::string& value, double bytes_per_peer, int n_peers,
                  int peers_here = 0);

}  // namespace avb::app
