#include "sim/topology.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <istream>
#include <stdexcept>
#include <unordered_set>

#include <sys/stat.h>

#include "core/error.hpp"
#include "core/lines.hpp"
#include "core/rng.hpp"

namespace avb {

namespace {

using AdjacencyLists = std::vector<std::vector<int>>;

constexpr std::string_view accepted_topologies =
    "{ring, torus, hypercube, exp, one-peer-exp, random-regular:K, complete, file:PATH}";

[[noreturn]] void bad_topology(std::string_view text) {
  throw ConfigError("--topology: '" + std::string(text) + "' is not one of " + std::string(accepted_topologies));
}

// Smallest c with 2^c >= n: the number of distinct offsets 2^j below n.
int ceil_log2(int n) {
  int c = 0;
  while ((std::int64_t{1} << c) < n) ++c;
  return c;
}

bool is_power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

void sort_unique(std::vector<int>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

// The smallest peer that breadth-first search from peer 0 does not reach, or -1
// when the graph is connected.
int first_unreachable(const AdjacencyLists& adj) {
  const int n = static_cast<int>(adj.size());
  if (n == 0) return -1;
  std::vector<char> seen(adj.size(), 0);
  std::vector<int> queue{0};
  seen[0] = 1;
  for (std::size_t head = 0; head < queue.size(); ++head)
    for (int j : adj[static_cast<std::size_t>(queue[head])])
      if (!seen[static_cast<std::size_t>(j)]) {
        seen[static_cast<std::size_t>(j)] = 1;
        queue.push_back(j);
      }
  for (int i = 0; i < n; ++i)
    if (!seen[static_cast<std::size_t>(i)]) return i;
  return -1;
}

// ---- random regular graphs -------------------------------------------------

// Tracks which pairs are already edges while a random graph grows. Degrees up to
// 64 scan the (short) lists; denser graphs use a bit matrix when it is small
// (n <= 16384: at most 32 MB), else a hash set of pair keys.
class EdgeSet {
 public:
  EdgeSet(const AdjacencyLists& adj, int k) : adj_(adj), n_(adj.size()) {
    if (k <= 64) mode_ = Mode::scan;
    else if (n_ <= 16384) mode_ = Mode::bits, bits_.assign(n_ * n_, false);
    else mode_ = Mode::hash;
  }
  bool contains(int u, int v) const {
    switch (mode_) {
      case Mode::bits: return bits_[static_cast<std::size_t>(u) * n_ + static_cast<std::size_t>(v)];
      case Mode::hash: return keys_.count(key(u, v)) != 0;
      case Mode::scan: break;
    }
    const auto& list = adj_[static_cast<std::size_t>(u)];
    return std::find(list.begin(), list.end(), v) != list.end();
  }
  void insert(int u, int v) {
    if (mode_ == Mode::bits) {
      bits_[static_cast<std::size_t>(u) * n_ + static_cast<std::size_t>(v)] = true;
      bits_[static_cast<std::size_t>(v) * n_ + static_cast<std::size_t>(u)] = true;
    } else if (mode_ == Mode::hash) {
      keys_.insert(key(u, v));
    }
  }

 private:
  enum class Mode { scan, bits, hash };
  static std::uint64_t key(int u, int v) {
    const auto [lo, hi] = std::minmax(u, v);
    return (static_cast<std::uint64_t>(lo) << 32) | static_cast<std::uint32_t>(hi);
  }
  const AdjacencyLists& adj_;
  std::size_t n_;
  Mode mode_ = Mode::scan;
  std::vector<bool> bits_;
  std::unordered_set<std::uint64_t> keys_;
};

// One attempt at a simple k-regular graph by incremental stub pairing (Steger and
// Wormald 1999): draw two of the remaining stubs uniformly; join them unless that
// makes a self-loop or a multi-edge, else draw again. Asymptotically uniform for
// small k. Returns false when the remaining stubs admit no legal pair, so the
// caller restarts with the next attempt counter. Draws use the counter
// (attempt, edges placed so far, draw number) of the topology stream.
bool pair_stubs(int n, int k, const Stream& stream, std::uint64_t attempt, AdjacencyLists& adj) {
  adj.assign(static_cast<std::size_t>(n), {});
  for (auto& list : adj) list.reserve(static_cast<std::size_t>(k));
  EdgeSet edges(adj, k);
  std::vector<int> stubs(static_cast<std::size_t>(n) * static_cast<std::size_t>(k));
  for (std::size_t s = 0; s < stubs.size(); ++s) stubs[s] = static_cast<int>(s / static_cast<std::size_t>(k));

  std::size_t m = stubs.size();
  std::uint64_t placed = 0, draw = 0;
  int misses = 0;
  while (m > 0) {
    auto a = static_cast<std::size_t>(stream.below(m, attempt, placed, draw++));
    auto b = static_cast<std::size_t>(stream.below(m - 1, attempt, placed, draw++));
    if (b >= a) ++b;
    const int u = stubs[a], v = stubs[b];
    if (u != v && !edges.contains(u, v)) {
      adj[static_cast<std::size_t>(u)].push_back(v);
      adj[static_cast<std::size_t>(v)].push_back(u);
      edges.insert(u, v);
      // Swap-remove the higher index first so the lower one stays valid.
      const auto [lo, hi] = std::minmax(a, b);
      stubs[hi] = stubs[--m];
      stubs[lo] = stubs[--m];
      ++placed;
      draw = 0;
      misses = 0;
      continue;
    }
    // Many misses in a row only happen near the end, when few stubs remain: check
    // whether any legal pair is left at all.
    if (++misses < 64) continue;
    misses = 0;
    std::vector<int> left(stubs.begin(), stubs.begin() + static_cast<std::ptrdiff_t>(m));
    sort_unique(left);
    bool any = false;
    for (std::size_t p = 0; p < left.size() && !any; ++p)
      for (std::size_t q = p + 1; q < left.size() && !any; ++q) any = !edges.contains(left[p], left[q]);
    if (!any) return false;
  }
  return true;
}

AdjacencyLists random_regular(const TopologySpec& spec, int n, std::uint64_t seed) {
  const int k = spec.degree;
  const std::string where = "--topology " + to_string(spec) + ": ";
  if (k >= n)
    throw ConfigError(where + "needs K below the number of peers (got K = " + std::to_string(k) +
                      ", " + std::to_string(n) + " peers)");
  if ((static_cast<std::int64_t>(n) * k) % 2 != 0)
    throw ConfigError(where + "needs the number of peers times K to be even (got " + std::to_string(n) +
                      " peers, K = " + std::to_string(k) + ")");
  if (k == 1 && n != 2)
    throw ConfigError(where + "a 1-regular graph is a perfect matching, connected only for 2 peers (got " +
                      std::to_string(n) + ")");

  const Stream stream(seed, StreamId::topology);
  AdjacencyLists adj;

  if (2 * k > n - 1) {
    // Dense: draw the complement, which is (n-1-k)-regular and sparser, and flip
    // it. Minimum degree >= n/2 makes the result connected.
    const int kc = n - 1 - k;
    AdjacencyLists comp;
    for (std::uint64_t attempt = 0;; ++attempt)
      if (pair_stubs(n, kc, stream, attempt, comp)) break;
    adj.assign(static_cast<std::size_t>(n), {});
    std::vector<char> mark(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      std::fill(mark.begin(), mark.end(), 0);
      for (int j : comp[static_cast<std::size_t>(i)]) mark[static_cast<std::size_t>(j)] = 1;
      for (int j = 0; j < n; ++j)
        if (j != i && !mark[static_cast<std::size_t>(j)]) adj[static_cast<std::size_t>(i)].push_back(j);
    }
    return adj;
  }

  if (k == 2) {
    // The connected 2-regular graphs are the Hamiltonian cycles, and a uniformly
    // random permutation read as a cycle gives each of them equally often.
    // Fisher-Yates with counters (0, position, 0).
    std::vector<int> order(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
    for (int i = n - 1; i > 0; --i) {
      const auto j = stream.below(static_cast<std::uint64_t>(i) + 1, 0, static_cast<std::uint64_t>(i), 0);
      std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
    }
    adj.assign(static_cast<std::size_t>(n), {});
    for (int i = 0; i < n; ++i) {
      const int u = order[static_cast<std::size_t>(i)], v = order[static_cast<std::size_t>((i + 1) % n)];
      adj[static_cast<std::size_t>(u)].push_back(v);
      adj[static_cast<std::size_t>(v)].push_back(u);
    }
    return adj;
  }

  // k >= 3: random regular graphs are connected with high probability; a
  // disconnected draw is thrown away like a stuck one.
  constexpr std::uint64_t max_attempts = 10000;
  for (std::uint64_t attempt = 0; attempt < max_attempts; ++attempt)
    if (pair_stubs(n, k, stream, attempt, adj) && first_unreachable(adj) < 0) return adj;
  throw ConfigError(where + "found no connected " + std::to_string(k) + "-regular graph on " + std::to_string(n) +
                    " peers in " + std::to_string(max_attempts) + " attempts");
}

// ---- edge-list files --------------------------------------------------------

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
  const char* end = word.data() + word.size();
  const auto [ptr, ec] = std::from_chars(word.data(), end, peer);
  return ec == std::errc() && ptr == end && peer >= 0 && peer < n;
}

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

}  // namespace

// ---- names ------------------------------------------------------------------

TopologySpec parse_topology(std::string_view text) {
  TopologySpec spec;
  if (text == "ring") spec.kind = TopologyKind::ring;
  else if (text == "torus") spec.kind = TopologyKind::torus;
  else if (text == "hypercube") spec.kind = TopologyKind::hypercube;
  else if (text == "exp") spec.kind = TopologyKind::exp;
  else if (text == "one-peer-exp") spec.kind = TopologyKind::one_peer_exp;
  else if (text == "complete") spec.kind = TopologyKind::complete;
  else if (text.starts_with("random-regular:")) {
    const std::string_view digits = text.substr(std::string_view("random-regular:").size());
    int k = 0;
    const char* end = digits.data() + digits.size();
    const auto [ptr, ec] = std::from_chars(digits.data(), end, k);
    if (digits.empty() || ec != std::errc() || ptr != end || k < 1)
      throw ConfigError("--topology: '" + std::string(text) + "' is not one of " + std::string(accepted_topologies) +
                        " (K must be an integer >= 1)");
    spec.kind = TopologyKind::random_regular;
    spec.degree = k;
  } else if (text.starts_with("file:") && text.size() > 5) {
    spec.kind = TopologyKind::file;
    spec.path = std::string(text.substr(5));
  } else {
    bad_topology(text);
  }
  return spec;
}

std::string to_string(const TopologySpec& spec) {
  switch (spec.kind) {
    case TopologyKind::ring: return "ring";
    case TopologyKind::torus: return "torus";
    case TopologyKind::hypercube: return "hypercube";
    case TopologyKind::exp: return "exp";
    case TopologyKind::one_peer_exp: return "one-peer-exp";
    case TopologyKind::random_regular: return "random-regular:" + std::to_string(spec.degree);
    case TopologyKind::complete: return "complete";
    case TopologyKind::file: return "file:" + spec.path;
  }
  return "?";
}

Weights parse_weights(std::string_view name) { return kWeightsNames.parse(name); }

std::string_view to_string(Weights weights) { return kWeightsNames.name(weights); }

// ---- the graph --------------------------------------------------------------

Topology::Topology(const TopologySpec& spec, int n, std::uint64_t seed) : spec_(spec), n_(n) {
  if (n < 1)
    throw ConfigError("--topology " + to_string(spec) + ": needs at least one peer (got " + std::to_string(n) + ")");
  const auto size = static_cast<std::size_t>(n);
  AdjacencyLists adj(size);  // undirected kinds fill this; directed ones fill in_/out_ directly

  switch (spec.kind) {
    case TopologyKind::ring:
      for (int i = 0; i < n; ++i) adj[static_cast<std::size_t>(i)] = {(i + 1) % n, (i + n - 1) % n};
      break;
    case TopologyKind::torus: {
      int a = static_cast<int>(std::sqrt(static_cast<double>(n)));
      while (static_cast<std::int64_t>(a + 1) * (a + 1) <= n) ++a;  // exact integer square root
      while (static_cast<std::int64_t>(a) * a > n) --a;
      while (n % a != 0) --a;
      const int b = n / a;
      for (int i = 0; i < n; ++i) {
        const int r = i / b, c = i % b;
        adj[static_cast<std::size_t>(i)] = {((r + 1) % a) * b + c, ((r + a - 1) % a) * b + c,
                                            r * b + (c + 1) % b, r * b + (c + b - 1) % b};
      }
      break;
    }
    case TopologyKind::hypercube:
      if (!is_power_of_two(n))
        throw ConfigError("--topology hypercube: needs the number of peers to be a power of two (got " +
                          std::to_string(n) + ")");
      for (int i = 0; i < n; ++i)
        for (int bit = 1; bit < n; bit <<= 1) adj[static_cast<std::size_t>(i)].push_back(i ^ bit);
      break;
    case TopologyKind::exp: {
      // 2^j < n for every j < ceil(log2 n), so the offsets are distinct and nonzero.
      const int offsets = ceil_log2(n);
      in_.assign(1, AdjacencyLists(size));
      out_.assign(1, AdjacencyLists(size));
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < offsets; ++j) {
          out_[0][static_cast<std::size_t>(i)].push_back((i + (1 << j)) % n);
          in_[0][static_cast<std::size_t>(i)].push_back(((i - (1 << j)) % n + n) % n);
        }
      break;
    }
    case TopologyKind::one_peer_exp: {
      const int phases = std::max(1, ceil_log2(n));
      in_.assign(static_cast<std::size_t>(phases), AdjacencyLists(size));
      out_.assign(static_cast<std::size_t>(phases), AdjacencyLists(size));
      if (n > 1)
        for (int k = 0; k < phases; ++k)
          for (int i = 0; i < n; ++i) {
            out_[static_cast<std::size_t>(k)][static_cast<std::size_t>(i)] = {(i + (1 << k)) % n};
            in_[static_cast<std::size_t>(k)][static_cast<std::size_t>(i)] = {((i - (1 << k)) % n + n) % n};
          }
      break;
    }
    case TopologyKind::random_regular:
      adj = random_regular(spec, n, seed);
      break;
    case TopologyKind::complete:
      break;  // not stored: see in_neighbours
    case TopologyKind::file:
      adj = read_edge_list(spec, n);
      break;
  }

  if (directed()) {
    for (auto& phase : in_)
      for (auto& list : phase) sort_unique(list);
    for (auto& phase : out_)
      for (auto& list : phase) sort_unique(list);
    return;
  }
  store_undirected(std::move(adj));
}

Topology::Topology(const TopologySpec& spec, int n, std::istream& edge_list) : spec_(spec), n_(n) {
  if (spec.kind != TopologyKind::file)
    throw std::invalid_argument("Topology: an edge-list stream needs a file:PATH spec, got " + to_string(spec));
  if (n < 1)
    throw ConfigError("--topology " + to_string(spec) + ": needs at least one peer (got " + std::to_string(n) + ")");
  store_undirected(read_edge_list(edge_list, spec, n));
}

void Topology::store_undirected(std::vector<std::vector<int>> adj) {
  // One list per peer, stored once (in_); out_ stays empty.
  for (int i = 0; i < n_; ++i) {
    auto& list = adj[static_cast<std::size_t>(i)];
    std::erase(list, i);  // small rings and tori wrap onto themselves
    sort_unique(list);
  }
  in_.assign(1, std::move(adj));
}

bool Topology::directed() const {
  return spec_.kind == TopologyKind::exp || spec_.kind == TopologyKind::one_peer_exp;
}

bool Topology::time_varying() const { return spec_.kind == TopologyKind::one_peer_exp; }

int Topology::period() const { return static_cast<int>(in_.size()); }

std::size_t Topology::phase(int t, int i) const {
  if (t < 1 || i < 0 || i >= n_)
    throw std::out_of_range("Topology: round " + std::to_string(t) + ", peer " + std::to_string(i) +
                            " (rounds start at 1, peers below " + std::to_string(n_) + ")");
  return static_cast<std::size_t>((t - 1) % period());
}

std::vector<int> Topology::in_neighbours(int t, int i) const {
  const std::size_t p = phase(t, i);
  if (spec_.kind == TopologyKind::complete) {
    std::vector<int> everyone;
    everyone.reserve(static_cast<std::size_t>(n_ > 0 ? n_ - 1 : 0));
    for (int j = 0; j < n_; ++j)
      if (j != i) everyone.push_back(j);
    return everyone;
  }
  return in_[p][static_cast<std::size_t>(i)];
}

std::vector<int> Topology::out_neighbours(int t, int i) const {
  if (!directed()) return in_neighbours(t, i);
  return out_[phase(t, i)][static_cast<std::size_t>(i)];
}

std::vector<std::pair<int, int>> Topology::edges(int t) const {
  std::vector<std::pair<int, int>> result;
  for (int i = 0; i < n_; ++i)
    for (int j : out_neighbours(t, i)) result.emplace_back(std::min(i, j), std::max(i, j));
  std::sort(result.begin(), result.end());
  result.erase(std::unique(result.begin(), result.end()), result.end());
  return result;
}

MixingRow Topology::mixing_row(Weights weights, int t, int i) const {
  const auto& in = in_neighbours(t, i);
  MixingRow row;
  row.peers.reserve(in.size() + 1);
  row.weights.reserve(in.size() + 1);
  const auto self_at = std::lower_bound(in.begin(), in.end(), i) - in.begin();

  if (weights == Weights::uniform) {
    row.peers.assign(in.begin(), in.end());
    row.peers.insert(row.peers.begin() + self_at, i);
    row.weights.assign(row.peers.size(), 1.0 / static_cast<double>(row.peers.size()));
    return row;
  }

  if (directed())
    throw ConfigError("--weights metropolis: needs an undirected --topology (ring, torus, hypercube, "
                      "random-regular:K, complete, file:PATH)");
  const auto d_i = in.size();
  double others = 0.0;
  for (std::size_t k = 0; k < in.size(); ++k) {
    if (static_cast<std::ptrdiff_t>(k) == self_at) {
      row.peers.push_back(i);
      row.weights.push_back(0.0);  // filled in below
    }
    const auto d_j = in_neighbours(t, in[k]).size();
    const double w = 1.0 / (1.0 + static_cast<double>(std::max(d_i, d_j)));
    row.peers.push_back(in[k]);
    row.weights.push_back(w);
    others += w;
  }
  if (self_at == static_cast<std::ptrdiff_t>(in.size())) {
    row.peers.push_back(i);
    row.weights.push_back(0.0);
  }
  row.weights[static_cast<std::size_t>(self_at)] = 1.0 - others;
  return row;
}

}  // namespace avb
