// The sequential engine's reading of a platform file, as its XML handlers leave it
// (platform_file.cpp), and the model made of it (platform_regions.cpp).
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <expat.h>

#include "protocols/time_model.hpp"

namespace avb::app {

// A region as the file describes it: a <cluster>, or a zone that lists its hosts.
struct RegionReading {
  std::string id;
  int zone = -1;   // the zone listing its hosts (by order of opening); -1: a <cluster>
  int depth = 0;   // zones around its hosts (a <cluster> counts as its own)
  int line = 0;
  long long hosts = 0;                        // a <cluster>'s
  double speed = 0, bandwidth = 0, latency = 0;  // a <cluster>'s hosts and links
  double backbone = HUGE_VAL, backbone_latency = 0;  // none: every flow has the full rate
  std::vector<double> speeds;                 // listed hosts, in file order
  std::vector<std::string> host_links;        // their links' ids
  bool has_backbone = false;
  long long count() const { return zone < 0 ? hosts : static_cast<long long>(speeds.size()); }
};

struct LinkReading {
  double bandwidth, latency;
  bool split;  // SPLITDUPLEX (a host's), else SHARED (a wide-area link)
};

struct RouteReading {
  std::string src, dst;
  std::vector<std::string> links;
  int line;
};

struct OpenZone {
  int index;
  std::string id, routing;
};

// What the parser has seen.
struct Reading {
  std::string path;
  XML_Parser parser = nullptr;
  int line = 0;  // of the element being read
  int zones = 0;
  std::vector<OpenZone> open;  // the zones around the element being read
  std::vector<RegionReading> regions;
  std::map<std::string, LinkReading> links;
  std::vector<RouteReading> routes;
  bool in_route = false;
  std::string error;  // the first problem; parsing stops there

  void refuse(const std::string& why) {
    if (error.empty()) error = "--platform: " + path + ":" + std::to_string(line) + ": " + why;
  }
  // The region whose hosts the innermost zone lists (made at its first element).
  RegionReading& zone_region() {
    const OpenZone& z = open.back();
    if (regions.empty() || regions.back().zone != z.index) {
      regions.emplace_back();
      regions.back().id = z.id;
      regions.back().zone = z.index;
      regions.back().depth = static_cast<int>(open.size());
      regions.back().line = line;
    }
    return regions.back();
  }
};

// The platform the reading describes, its first `peers` hosts listed when they
// are unequal. On a problem, r.refuse's, and the model is not to be used.
PlatformModel platform_of(Reading& r, int peers);

}  // namespace avb::app
