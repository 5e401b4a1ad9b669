// Edge-list files: one undirected edge "i j" per line, '#' comments, blank lines.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <istream>
#include <string>
#include <string_view>

#include <sys/stat.h>

#include "core/error.hpp"
#include "core/lines.hpp"
#include "core/parse.hpp"
#include "sim/graphs.hpp"

namespace avb::graph {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

std::vector<std::string_view> split_words(std::string_view line) {
  std::vector<std::string_view> words;
  std::size_t p = 0;
  while (p < line.size()) {
    while (p < line.size() && is_space(line[p])) ++p;
    const std::size_t start = p;
    while (p < line.size() && !is_space(line[p])) ++p;
    if (p > start) words.push_back(line.substr(start, p - start));
  }
  return words;
}

// The line as quoted in an error message: trailing blanks dropped, long lines cut,
// control bytes escaped (core/lines.hpp).
std::string quoted_line(std::string_view line) {
  while (!line.empty() && is_space(line.back())) line.remove_suffix(1);
  return quoted_text(line);
}

bool parse_peer(std::string_view word, int n, int& peer) {
  const auto value = parse_int(word);
  if (!value || *value < 0 || *value >= n) return false;
  peer = *value;
  return true;
}

}  // namespace

AdjacencyLists read_edge_list(std::istream& in, const TopologySpec& spec, int n) {
  const std::string where = "--topology " + to_string(spec) + ": ";
  AdjacencyLists adj(static_cast<std::size_t>(n));
  std::string line;
  bool too_long = false;
  // An edge is two numbers: a line of 64 KiB is already not an edge list.
  constexpr std::size_t max_line = 1 << 16;
  for (long number = 1; read_line(in, line, max_line, too_long); ++number) {
    const std::string at = where + "line " + std::to_string(number) + ": ";
    if (too_long)
      throw ConfigError(at + "longer than " + std::to_string(max_line) + " characters (is this a text edge list?)");
    const auto words = split_words(line);
    if (words.empty() || words[0][0] == '#') continue;
    int i = 0, j = 0;
    if (words.size() != 2 || !parse_peer(words[0], n, i) || !parse_peer(words[1], n, j))
      throw ConfigError(at + quoted_line(line) + " is not two peer numbers in [0, " + std::to_string(n) + ")");
    if (i == j) throw ConfigError(at + quoted_line(line) + " is a self-loop");
    adj[static_cast<std::size_t>(i)].push_back(j);
    adj[static_cast<std::size_t>(j)].push_back(i);
  }
  if (in.bad()) throw ConfigError(where + "cannot read the file");
  for (auto& list : adj) sort_unique(list);
  if (const int p = first_unreachable(adj); p >= 0)
    throw ConfigError(where + "the graph is not connected: peer " + std::to_string(p) +
                      " cannot be reached from peer 0");
  return adj;
}

AdjacencyLists read_edge_list(const TopologySpec& spec, int n) {
  // The file system would stop at a NUL and open another file than the one named.
  if (spec.path.find('\0') != std::string::npos)
    throw ConfigError("--topology file:" + quoted_text(spec.path) + ": the path contains a NUL byte");
  // A folder opens as an ifstream, and its first read throws std::ios_base::failure
  // ("Is a directory"), which is no ConfigError: refuse it by name first.
  struct stat status {};
  if (::stat(spec.path.c_str(), &status) == 0 && S_ISDIR(status.st_mode))
    throw ConfigError("--topology " + to_string(spec) + ": cannot read the file (it is a directory)");
  errno = 0;
  std::ifstream in(spec.path);
  if (!in) {
    const int err = errno;
    throw ConfigError("--topology " + to_string(spec) + ": cannot read the file" +
                      (err != 0 ? std::string(" (") + std::strerror(err) + ")" : ""));
  }
  return read_edge_list(in, spec, n);
}

}  // namespace avb::graph
