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

// The peers that share this machine's memory: all of them under SMPI, the local
// rank count under mpirun or srun (OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS),
// else 1; or peers_here when it is > 0.
int peers_on_this_machine(int n_peers, int peers_here);

}  // namespace avb::app
