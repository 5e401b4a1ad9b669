#include "common/platform_file.hpp"

#include <expat.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <vector>

#include "core/error.hpp"
#include "core/format.hpp"

namespace avb::app {

namespace {

double prefix_factor(const std::string& prefix) {
  static const std::map<std::string, double> factors = {
      {"", 1.0},    {"k", 1e3},          {"K", 1e3},          {"M", 1e6},          {"G", 1e9},
      {"T", 1e12},  {"P", 1e15},         {"E", 1e18},         {"Ki", 1024.0},      {"Mi", 1048576.0},
      {"Gi", 1073741824.0},              {"Ti", 1099511627776.0}};
  const auto it = factors.find(prefix);
  return it == factors.end() ? -1.0 : it->second;
}

// What the parser has seen: the hosts, links and backbone of the one cluster.
struct Reading {
  std::string path;
  XML_Parser parser = nullptr;
  int line = 0;  // of the element being read
  int clusters = 0, zones = 0;
  PlatformModel model;
  long long cluster_hosts = 0;                 // a <cluster>'s
  std::vector<double> speeds;                  // listed hosts, in file order
  std::vector<std::string> host_links;         // their links' ids
  std::map<std::string, std::pair<double, double>> links;  // id -> (bandwidth, latency)
  bool backbone = false;
  std::string error;  // the first problem; parsing stops there

  void refuse(const std::string& why) {
    if (error.empty()) error = "--platform: " + path + ":" + std::to_string(line) + ": " + why;
  }
};

std::map<std::string, std::string> attributes(const XML_Char** atts) {
  std::map<std::string, std::string> out;
  for (int i = 0; atts[i] != nullptr; i += 2) out[atts[i]] = atts[i + 1];
  return out;
}

// Refuses an attribute outside `known`.
bool only(Reading& r, const std::string& element, const std::map<std::string, std::string>& a,
          std::initializer_list<const char*> known) {
  for (const auto& attribute : a) {
    const std::string& name = attribute.first;
    if (std::find_if(known.begin(), known.end(), [&name](const char* k) { return name == k; }) == known.end()) {
      r.refuse("<" + element + "> attribute " + name + "=\"" + attribute.second +
               "\": the sequential engine's model has no such setting (run this platform under SMPI)");
      return false;
    }
  }
  return true;
}

double quantity(Reading& r, const std::map<std::string, std::string>& a, const std::string& name,
                const std::string& kind, const std::string& element, double fallback = -1) {
  const auto it = a.find(name);
  if (it == a.end()) {
    if (fallback < 0) r.refuse("<" + element + "> needs " + name);
    return fallback;
  }
  try {
    return parse_quantity(it->second, kind, "<" + element + "> " + name);
  } catch (const ConfigError& e) {
    r.refuse(e.what());
    return fallback;
  }
}

// "0-63" or "0-3,8,10-11": how many hosts.
long long radical_count(const std::string& radical) {
  long long count = 0;
  std::stringstream parts(radical);
  std::string part;
  while (std::getline(parts, part, ',')) {
    const auto dash = part.find('-');
    try {
      const long long first = std::stoll(part.substr(0, dash));
      const long long last = dash == std::string::npos ? first : std::stoll(part.substr(dash + 1));
      if (last < first || first < 0) return -1;
      constexpr long long kMany = 1LL << 40;  // far beyond any peer count, and no overflow
      count = std::min(count + std::min(last - first, kMany) + 1, kMany);
    } catch (const std::exception&) {
      return -1;
    }
  }
  return count;
}

void cluster(Reading& r, const std::map<std::string, std::string>& a) {
  if (!only(r, "cluster", a, {"id", "prefix", "suffix", "radical", "speed", "bw", "lat", "bb_bw", "bb_lat",
                              "sharing_policy", "bb_sharing_policy", "topology", "router_id"}))
    return;
  if (a.count("topology") && a.at("topology") != "FLAT") return r.refuse("<cluster> topology " + a.at("topology") + ": only FLAT is modelled");
  if (a.count("sharing_policy") && a.at("sharing_policy") != "SPLITDUPLEX")
    return r.refuse("<cluster> sharing_policy " + a.at("sharing_policy") + ": only SPLITDUPLEX links are modelled");
  PlatformModel& m = r.model;
  m.host_speed = quantity(r, a, "speed", "f", "cluster");
  m.bandwidth = quantity(r, a, "bw", "Bps", "cluster");
  m.link_latency = quantity(r, a, "lat", "s", "cluster");
  const bool fatpipe = a.count("bb_sharing_policy") && a.at("bb_sharing_policy") == "FATPIPE";
  if (a.count("bb_sharing_policy") && !fatpipe && a.at("bb_sharing_policy") != "SHARED")
    return r.refuse("<cluster> bb_sharing_policy " + a.at("bb_sharing_policy") + ": SHARED or FATPIPE");
  // No backbone, or one that never saturates (FATPIPE): every flow has the full rate.
  m.backbone = a.count("bb_bw") && !fatpipe ? quantity(r, a, "bb_bw", "Bps", "cluster") : HUGE_VAL;
  m.backbone_latency = a.count("bb_bw") ? quantity(r, a, "bb_lat", "s", "cluster", 0.0) : 0.0;
  const long long hosts = radical_count(a.count("radical") ? a.at("radical") : "");
  if (hosts < 1) return r.refuse("<cluster> radical \"" + (a.count("radical") ? a.at("radical") : "") +
                                 "\": not a list of ranges such as 0-63");
  r.cluster_hosts = hosts;
}

void start(void* data, const XML_Char* name, const XML_Char** atts) {
  auto& r = *static_cast<Reading*>(data);
  if (!r.error.empty()) return;
  r.line = static_cast<int>(XML_GetCurrentLineNumber(r.parser));
  const std::string element = name;
  const auto a = attributes(atts);
  if (element == "platform" || element == "prop") return;
  if (element == "zone" || element == "AS") {
    ++r.zones;
    const std::string routing = a.count("routing") ? a.at("routing") : "";
    if (r.zones > 1) return r.refuse("a second <zone>: the sequential engine models one cluster (run this under SMPI)");
    if (routing != "Cluster" && routing != "Full" && routing != "Floyd" && routing != "Dijkstra" && routing != "None")
      return r.refuse("<zone> routing \"" + routing + "\": not a routing SimGrid knows");
    return;
  }
  if (element == "cluster") {
    if (++r.clusters > 1) return r.refuse("a second <cluster>: the sequential engine models one (run this under SMPI)");
    return cluster(r, a);
  }
  if (element == "host") {
    if (!only(r, "host", a, {"id", "speed", "core"})) return;
    if (a.count("core") && a.at("core") != "1") return r.refuse("<host> core " + a.at("core") + ": one core a host is modelled");
    r.speeds.push_back(quantity(r, a, "speed", "f", "host"));
    r.host_links.emplace_back();
    return;
  }
  if (element == "link") {
    if (!only(r, "link", a, {"id", "bandwidth", "latency", "sharing_policy"})) return;
    if (a.count("sharing_policy") && a.at("sharing_policy") != "SPLITDUPLEX")
      return r.refuse("<link> sharing_policy " + a.at("sharing_policy") + ": only SPLITDUPLEX host links are modelled");
    r.links[a.count("id") ? a.at("id") : ""] = {quantity(r, a, "bandwidth", "Bps", "link"),
                                                quantity(r, a, "latency", "s", "link", 0.0)};
    return;
  }
  if (element == "host_link") {
    const std::string id = a.count("id") ? a.at("id") : "", up = a.count("up") ? a.at("up") : "";
    if (r.host_links.empty()) return r.refuse("<host_link> before any <host>");
    const std::string suffix = "_UP";
    if (up.size() < suffix.size() || up.compare(up.size() - suffix.size(), suffix.size(), suffix) != 0)
      return r.refuse("<host_link> up=\"" + up + "\": the UP half of a SPLITDUPLEX link is expected");
    r.host_links.back() = up.substr(0, up.size() - suffix.size());
    return;
  }
  if (element == "backbone") {
    if (r.backbone) return r.refuse("a second <backbone>");
    r.backbone = true;
    r.model.backbone = quantity(r, a, "bandwidth", "Bps", "backbone");
    r.model.backbone_latency = quantity(r, a, "latency", "s", "backbone", 0.0);
    return;
  }
  r.refuse("<" + element + ">: the sequential engine models one cluster (a <cluster>, or a zone of hosts, their "
           "links and a backbone); run this platform under SMPI");
}

void end(void* /*data*/, const XML_Char* /*name*/) {}

// A zone of listed hosts: each host's link, one latency for all.
void finish_listed(Reading& r) {
  std::vector<double> bandwidths;
  double latency = -1;
  for (std::size_t i = 0; i < r.host_links.size(); ++i) {
    const auto it = r.links.find(r.host_links[i]);
    if (it == r.links.end()) return r.refuse("host " + std::to_string(i) + " has no <host_link> to a <link> of the file");
    if (latency >= 0 && it->second.second != latency)
      return r.refuse("the hosts' links have different latencies: the model has one");
    latency = it->second.second;
    bandwidths.push_back(it->second.first);
  }
  PlatformModel& m = r.model;
  if (!r.backbone) {
    m.backbone = HUGE_VAL;
    m.backbone_latency = 0.0;
  }
  m.link_latency = latency;
  std::vector<double> sorted = r.speeds;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
  m.host_speed = sorted[sorted.size() / 2];  // the median, for /config; each host has its own
  sorted = bandwidths;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
  m.bandwidth = sorted[sorted.size() / 2];
  m.listed_speeds = std::make_shared<const std::vector<double>>(r.speeds);
  m.listed_bandwidths = std::make_shared<const std::vector<double>>(std::move(bandwidths));
}

}  // namespace

double parse_quantity(const std::string& text, const std::string& kind, const std::string& what) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  double factor = -1, divisor = 0;
  if (used > 0 && unit.empty()) factor = 1;
  const std::string bits = kind == "Bps" ? "bps" : "";
  for (const std::string& base : {kind, bits}) {
    if (factor > 0 || base.empty() || unit.size() < base.size() || unit.compare(unit.size() - base.size(), base.size(), base) != 0)
      continue;
    const std::string prefix = unit.substr(0, unit.size() - base.size());
    if (kind == "s") {  // divisors: 50us is 50 / 1e6, exactly the double 5e-05
      static const std::map<std::string, double> times = {{"", 1}, {"m", 1e3}, {"u", 1e6}, {"n", 1e9}, {"p", 1e12}};
      if (const auto it = times.find(prefix); it != times.end()) factor = 1 / it->second, divisor = it->second;
    } else if (const double f = prefix_factor(prefix); f > 0) {
      factor = base == "bps" ? f / 8 : f;
    }
  }
  // A latency may be 0; a speed or bandwidth of 0 would make every transfer endless.
  const bool time = kind == "s";
  const double result = divisor > 0 ? value / divisor : value * factor;
  if (used == 0 || factor <= 0 || !(time ? result >= 0 : result > 0) || !std::isfinite(result))
    throw ConfigError(what + ": \"" + text + "\" is not a number " + (time ? ">= 0" : "> 0") + " with a unit of " +
                      kind + " (e.g. 1G" + kind + ")");
  return result;
}

PlatformModel read_platform_file(const std::string& path, int peers) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError("--platform: " + path + ": cannot be read (a platform name: cluster, cloud, geo)");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_platform(buffer.str(), path, peers);
}

PlatformModel parse_platform(const std::string& text, const std::string& path, int peers) {
  Reading r;
  r.path = path;
  const std::unique_ptr<XML_ParserStruct, decltype(&XML_ParserFree)> parser(XML_ParserCreate(nullptr), XML_ParserFree);
  r.parser = parser.get();
  XML_SetUserData(parser.get(), &r);
  XML_SetElementHandler(parser.get(), start, end);
  if (XML_Parse(parser.get(), text.data(), static_cast<int>(text.size()), 1) == XML_STATUS_ERROR)
    throw ConfigError("--platform: " + path + ":" + std::to_string(XML_GetCurrentLineNumber(parser.get())) +
                      ": not well-formed XML (" + XML_ErrorString(XML_GetErrorCode(parser.get())) + ")");
  if (!r.error.empty()) throw ConfigError(r.error);
  if (r.clusters == 0 && r.host_links.empty())
    throw ConfigError("--platform: " + path + ": no <cluster> and no <host>: not a platform the sequential engine models");
  if (r.clusters > 0 && !r.host_links.empty())
    throw ConfigError("--platform: " + path + ": both a <cluster> and listed <host>s: the sequential engine models one cluster");
  if (!r.host_links.empty()) finish_listed(r);
  if (!r.error.empty()) throw ConfigError(r.error);
  const long long hosts = r.clusters > 0 ? r.cluster_hosts : static_cast<long long>(r.speeds.size());
  if (hosts < peers)
    throw ConfigError("--platform: " + path + ": " + std::to_string(hosts) + " hosts for " +
                      std::to_string(peers) + " peers (one host a peer)");
  return r.model;
}

}  // namespace avb::app
