#include "common/platform_file.hpp"
#include "common/platform_reading.hpp"

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

std::map<std::string, std::string> attributes(const XML_Char** atts) {
  std::map<std::string, std::string> out;
  for (int i = 0; atts[i] != nullptr; i += 2) out[atts[i]] = atts[i + 1];
  return out;
}

std::string value(const std::map<std::string, std::string>& a, const std::string& name) {
  const auto it = a.find(name);
  return it == a.end() ? "" : it->second;
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
  if (r.open.size() > 1 || (r.open.size() == 1 && r.open.back().routing != "Full"))
    return r.refuse("<cluster> inside a zone of routing \"" + r.open.back().routing +
                    "\": the sequential engine models clusters side by side in one zone of Full routing");
  if (a.count("topology") && a.at("topology") != "FLAT") return r.refuse("<cluster> topology " + a.at("topology") + ": only FLAT is modelled");
  if (a.count("sharing_policy") && a.at("sharing_policy") != "SPLITDUPLEX")
    return r.refuse("<cluster> sharing_policy " + a.at("sharing_policy") + ": only SPLITDUPLEX links are modelled");
  RegionReading c;
  c.id = value(a, "id");
  c.depth = static_cast<int>(r.open.size()) + 1;
  c.line = r.line;
  c.speed = quantity(r, a, "speed", "f", "cluster");
  c.bandwidth = quantity(r, a, "bw", "Bps", "cluster");
  c.latency = quantity(r, a, "lat", "s", "cluster");
  const bool fatpipe = a.count("bb_sharing_policy") && a.at("bb_sharing_policy") == "FATPIPE";
  if (a.count("bb_sharing_policy") && !fatpipe && a.at("bb_sharing_policy") != "SHARED")
    return r.refuse("<cluster> bb_sharing_policy " + a.at("bb_sharing_policy") + ": SHARED or FATPIPE");
  // No backbone, or one that never saturates (FATPIPE): every flow has the full rate.
  if (a.count("bb_bw") && !fatpipe) c.backbone = quantity(r, a, "bb_bw", "Bps", "cluster");
  if (a.count("bb_bw")) c.backbone_latency = quantity(r, a, "bb_lat", "s", "cluster", 0.0);
  c.hosts = radical_count(value(a, "radical"));
  if (c.hosts < 1) return r.refuse("<cluster> radical \"" + value(a, "radical") + "\": not a list of ranges such as 0-63");
  r.regions.push_back(std::move(c));
}

void zone(Reading& r, const std::map<std::string, std::string>& a) {
  const std::string routing = value(a, "routing");
  if (routing != "Cluster" && routing != "Full" && routing != "Floyd" && routing != "Dijkstra" && routing != "None")
    return r.refuse("<zone> routing \"" + routing + "\": not a routing SimGrid knows");
  if (r.open.size() >= 2 || (r.open.size() == 1 && (r.open.back().routing != "Full" || routing != "Cluster")))
    return r.refuse("a <zone> of routing \"" + routing + "\" inside one of \"" + (r.open.empty() ? "" : r.open.back().routing) +
                    "\": the sequential engine models zones of routing Cluster side by side in one of Full routing "
                    "(run this under SMPI)");
  r.open.push_back({r.zones++, value(a, "id"), routing});
}

void host(Reading& r, const std::map<std::string, std::string>& a) {
  if (!only(r, "host", a, {"id", "speed", "core"})) return;
  if (a.count("core") && a.at("core") != "1") return r.refuse("<host> core " + a.at("core") + ": one core a host is modelled");
  if (r.open.empty()) return r.refuse("<host> outside a <zone>");
  RegionReading& region = r.zone_region();
  region.speeds.push_back(quantity(r, a, "speed", "f", "host"));
  region.host_links.emplace_back();
}

void link(Reading& r, const std::map<std::string, std::string>& a) {
  if (!only(r, "link", a, {"id", "bandwidth", "latency", "sharing_policy"})) return;
  const std::string policy = value(a, "sharing_policy");
  if (!policy.empty() && policy != "SPLITDUPLEX" && policy != "SHARED")
    return r.refuse("<link> sharing_policy " + policy + ": SPLITDUPLEX (a host's link) or SHARED (a wide-area link)");
  r.links[value(a, "id")] = {quantity(r, a, "bandwidth", "Bps", "link"), quantity(r, a, "latency", "s", "link", 0.0),
                             policy == "SPLITDUPLEX"};
}

void host_link(Reading& r, const std::map<std::string, std::string>& a) {
  const std::string up = value(a, "up");
  if (r.open.empty() || r.regions.empty() || r.regions.back().zone != r.open.back().index ||
      r.regions.back().host_links.empty())
    return r.refuse("<host_link> before any <host> of its zone");
  const std::string suffix = "_UP";
  if (up.size() < suffix.size() || up.compare(up.size() - suffix.size(), suffix.size(), suffix) != 0)
    return r.refuse("<host_link> up=\"" + up + "\": the UP half of a SPLITDUPLEX link is expected");
  r.regions.back().host_links.back() = up.substr(0, up.size() - suffix.size());
}

void backbone(Reading& r, const std::map<std::string, std::string>& a) {
  if (r.open.empty()) return r.refuse("<backbone> outside a <zone>");
  RegionReading& region = r.zone_region();
  if (region.has_backbone) return r.refuse("a second <backbone> in one zone");
  region.has_backbone = true;
  region.backbone = quantity(r, a, "bandwidth", "Bps", "backbone");
  region.backbone_latency = quantity(r, a, "latency", "s", "backbone", 0.0);
}

void zone_route(Reading& r, const std::map<std::string, std::string>& a) {
  if (!only(r, "zoneRoute", a, {"src", "dst", "gw_src", "gw_dst", "symmetrical"})) return;
  const std::string symmetrical = value(a, "symmetrical");
  if (!symmetrical.empty() && symmetrical != "YES" && symmetrical != "yes")
    return r.refuse("<zoneRoute> symmetrical=\"" + symmetrical + "\": the model's routes are the same both ways");
  if (r.open.size() != 1 || r.open.back().routing != "Full")
    return r.refuse("<zoneRoute> outside a zone of Full routing around the regions");
  r.routes.push_back({value(a, "src"), value(a, "dst"), {}, r.line});
  r.in_route = true;
}

void start(void* data, const XML_Char* name, const XML_Char** atts) {
  auto& r = *static_cast<Reading*>(data);
  if (!r.error.empty()) return;
  r.line = static_cast<int>(XML_GetCurrentLineNumber(r.parser));
  const std::string element = name;
  const auto a = attributes(atts);
  if (element == "platform" || element == "prop") return;
  if (element == "zone" || element == "AS") return zone(r, a);
  if (element == "cluster") return cluster(r, a);
  if (element == "host") return host(r, a);
  if (element == "link") return link(r, a);
  if (element == "host_link") return host_link(r, a);
  if (element == "backbone") return backbone(r, a);
  if (element == "zoneRoute") return zone_route(r, a);
  if (element == "link_ctn" && r.in_route) {
    if (!only(r, "link_ctn", a, {"id", "direction"})) return;
    if (!value(a, "direction").empty() && value(a, "direction") != "NONE")
      return r.refuse("<link_ctn> direction " + value(a, "direction") + ": wide-area links are SHARED both ways");
    r.routes.back().links.push_back(value(a, "id"));
    return;
  }
  // A zone of hosts' gateway (a zoneRoute's gw_src or gw_dst) has no link of its own.
  if (element == "router" && !r.open.empty() && r.open.back().routing == "Cluster") return;
  r.refuse("<" + element + ">: the sequential engine models clusters (a <cluster>, or a zone of hosts, their links "
           "and a backbone), side by side in a zone of Full routing with a <zoneRoute> of wide-area links between "
           "each two; run this platform under SMPI");
}

void end(void* data, const XML_Char* name) {
  auto& r = *static_cast<Reading*>(data);
  const std::string element = name;
  if ((element == "zone" || element == "AS") && !r.open.empty()) r.open.pop_back();
  if (element == "zoneRoute") r.in_route = false;
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
  if (r.regions.empty())
    throw ConfigError("--platform: " + path + ": no <cluster> and no <host>: not a platform the sequential engine models");
  long long hosts = 0;
  for (const RegionReading& g : r.regions) {
    if (g.count() == 0) throw ConfigError("--platform: " + path + ":" + std::to_string(g.line) + ": zone \"" + g.id + "\" lists no <host>");
    hosts = std::min(hosts + g.count(), 1LL << 40);
  }
  if (hosts < peers)
    throw ConfigError("--platform: " + path + ": " + std::to_string(hosts) + " hosts for " +
                      std::to_string(peers) + " peers (one host a peer)");
  PlatformModel model = platform_of(r, peers);
  if (!r.error.empty()) throw ConfigError(r.error);
  return model;
}

}  // namespace avb::app
