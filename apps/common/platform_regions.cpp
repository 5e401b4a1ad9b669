#include <algorithm>
#include <memory>

#include "common/platform_reading.hpp"

namespace avb::app {

namespace {

// The model keeps a route for each pair of regions that hold peers.
constexpr std::size_t kMostRegions = 1024;

// A zone's listed hosts: each host's link bandwidth, one link latency for all.
void resolve_listed(Reading& r, RegionReading& g, std::vector<double>& bandwidths) {
  g.latency = -1;
  for (std::size_t i = 0; i < g.host_links.size(); ++i) {
    const auto it = r.links.find(g.host_links[i]);
    if (it == r.links.end() || !it->second.split)
      return r.refuse("host " + std::to_string(i) + " of zone \"" + g.id + "\" has no <host_link> to a SPLITDUPLEX <link>");
    if (g.latency >= 0 && it->second.latency != g.latency)
      return r.refuse("the hosts' links of zone \"" + g.id + "\" have different latencies: the model has one a zone");
    g.latency = it->second.latency;
    bandwidths.push_back(it->second.bandwidth);
  }
}

double median(std::vector<double> values) {
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2), values.end());
  return values[values.size() / 2];
}

// The hosts' speeds and link bandwidths one by one, the first `peers` of them.
void list_hosts(Reading& r, PlatformModel& m, int peers) {
  std::vector<double> speeds, bandwidths;
  for (RegionReading& g : r.regions) {
    std::vector<double> listed;
    if (g.zone >= 0) resolve_listed(r, g, listed);
    if (!r.error.empty()) return;
    for (long long i = 0; i < g.count() && static_cast<long long>(speeds.size()) < peers; ++i) {
      speeds.push_back(g.zone >= 0 ? g.speeds[static_cast<std::size_t>(i)] : g.speed);
      bandwidths.push_back(g.zone >= 0 ? listed[static_cast<std::size_t>(i)] : g.bandwidth);
    }
  }
  if (speeds.empty() || !r.error.empty()) return;
  m.host_speed = median(speeds);  // for /config; each host has its own
  m.bandwidth = median(bandwidths);
  m.listed_speeds = std::make_shared<const std::vector<double>>(std::move(speeds));
  m.listed_bandwidths = std::make_shared<const std::vector<double>>(std::move(bandwidths));
}

// The wide-area routes between the regions that hold peers, every pair's.
void add_routes(Reading& r, RegionTable& t, const std::map<std::string, int>& index) {
  const std::size_t n = t.regions.size();
  t.routes.assign(n * n, {});
  std::map<std::string, int> link_index;
  for (const RouteReading& route : r.routes) {
    r.line = route.line;
    const auto a = index.find(route.src), b = index.find(route.dst);
    if (a == index.end() || b == index.end() || a->second == b->second)
      return r.refuse("<zoneRoute> from \"" + route.src + "\" to \"" + route.dst + "\": not two clusters of the file");
    if (a->second >= static_cast<int>(n) || b->second >= static_cast<int>(n)) continue;  // no peer there
    std::vector<int>& links = t.routes[static_cast<std::size_t>(a->second) * n + static_cast<std::size_t>(b->second)];
    if (!links.empty() || route.links.empty())
      return r.refuse("<zoneRoute> from \"" + route.src + "\" to \"" + route.dst + "\": a second route, or no <link_ctn>");
    for (const std::string& id : route.links) {
      const auto it = r.links.find(id);
      if (it == r.links.end() || it->second.split)
        return r.refuse("<link_ctn> id=\"" + id + "\": not a SHARED <link> of the file");
      const auto [at, added] = link_index.try_emplace(id, static_cast<int>(t.links.size()));
      if (added) t.links.push_back({it->second.bandwidth, it->second.latency});
      links.push_back(at->second);
    }
    t.routes[static_cast<std::size_t>(b->second) * n + static_cast<std::size_t>(a->second)] = links;
  }
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = a + 1; b < n; ++b)
      if (t.routes[a * n + b].empty()) {
        r.line = r.regions[b].line;
        return r.refuse("no <zoneRoute> between \"" + r.regions[a].id + "\" and \"" + r.regions[b].id +
                        "\" (both hold peers)");
      }
}

// Several regions: each a cluster with its own hosts, links and backbone, joined
// by the wide-area links of the routes between them.
PlatformModel several_regions(Reading& r, int peers) {
  PlatformModel m;
  auto table = std::make_shared<RegionTable>();
  std::map<std::string, int> index;
  long long first = 0;
  for (const RegionReading& g : r.regions) {
    r.line = g.line;
    if (g.depth != 2) {
      r.refuse("several clusters: the sequential engine models them side by side in one zone of Full routing");
      return m;
    }
    if (g.id.empty() || !index.emplace(g.id, static_cast<int>(index.size())).second) {
      r.refuse("a cluster's id \"" + g.id + "\": each needs an id of its own (the routes name it)");
      return m;
    }
    if (first < peers) table->regions.push_back({static_cast<int>(first), 0.0, g.backbone, g.backbone_latency});
    first += g.count();
  }
  if (table->regions.size() > kMostRegions) {
    r.refuse(std::to_string(table->regions.size()) + " clusters hold peers: the sequential engine models at most " +
             std::to_string(kMostRegions) + " (a route for each pair)");
    return m;
  }
  list_hosts(r, m, peers);
  for (std::size_t k = 0; k < table->regions.size(); ++k)
    table->regions[k].link_latency = r.regions[k].latency;
  add_routes(r, *table, index);
  const RegionTable::Region& region = table->regions.front();
  m.link_latency = region.link_latency;
  m.backbone = region.backbone;
  m.backbone_latency = region.backbone_latency;
  m.regions = static_cast<int>(table->regions.size());
  if (!table->links.empty()) {  // for /config; each route has its own
    m.wan_bandwidth = table->links.front().bandwidth;
    m.wan_latency = table->links.front().latency;
  }
  m.listed_regions = std::move(table);
  return m;
}

// One cluster: a <cluster> (hosts alike), or a zone of listed hosts.
PlatformModel one_region(Reading& r, int peers) {
  PlatformModel m;
  RegionReading& g = r.regions.front();
  if (g.zone >= 0) {
    list_hosts(r, m, peers);
  } else {
    m.host_speed = g.speed;
    m.bandwidth = g.bandwidth;
  }
  m.link_latency = g.latency;
  m.backbone = g.backbone;
  m.backbone_latency = g.backbone_latency;
  return m;
}

}  // namespace

PlatformModel platform_of(Reading& r, int peers) {
  return r.regions.size() == 1 ? one_region(r, peers) : several_regions(r, peers);
}

}  // namespace avb::app
