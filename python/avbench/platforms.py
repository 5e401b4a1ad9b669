#!/usr/bin/env python3
"""Writes a SimGrid platform file and a hostfile for N simulated peers.

    scripts/avbench platform N OUT_DIR [--kind cluster|cloud|geo] [options]

Every kind gives one host per peer (peer-0 ... peer-N-1, in rank order in the
hostfile), each with a private split-duplex link to its cluster's backbone, so a
peer's messages share only its own link and the backbone:

  cluster  homogeneous: every host --speed, every link --bw/--lat (the default).
           With --speed-sigma S > 0 the host speeds are lognormal (below).
  cloud    heterogeneous, seeded: host speeds speed*exp(S*z) with S = --speed-sigma
           (default 0.5) and link bandwidths bw*exp(B*z') with B = --bw-sigma
           (default 0.5), z, z' standard normal keyed by (--seed, host): the
           sequential engine draws the same ones (averaging_bench --platform cloud),
           so the same host is slow on both.
  geo      --regions R clusters (peers split into R contiguous blocks of ranks), each
           a homogeneous cluster as above, joined pairwise by wide-area links of
           --wan-lat (default 40ms) and --wan-bw (default 1.25GBps): a message between
           regions crosses both backbones and one WAN link.

The files are OUT_DIR/<tag>.xml and OUT_DIR/<tag>.hosts, where the tag names the
kind, N and every setting that differs from its default (cluster-N for the default
cluster); both paths are printed. Host speeds matter only for work a program charges
explicitly (avbench: --step-flops, stragglers), since smpirun.sh does not simulate
computation; bandwidth and latency matter for every message.
"""
import argparse
import math
import os
import re
import sys

from avbench import keyed_stream

FLOPS = {"f": 1.0, "kf": 1e3, "Mf": 1e6, "Gf": 1e9, "Tf": 1e12}
BYTES = {"Bps": 1.0, "kBps": 1e3, "KBps": 1e3, "MBps": 1e6, "GBps": 1e9, "TBps": 1e12,
         "bps": 1 / 8, "kbps": 1e3 / 8, "Kbps": 1e3 / 8, "Mbps": 1e6 / 8, "Gbps": 1e9 / 8}
SECONDS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


def fail(message):
    sys.exit(f"avbench platform: error: {message}")


def quantity(flag, text, units):
    """A number with one of `units` (e.g. 125MBps), in base units."""
    m = re.fullmatch(r"([0-9.eE+-]+)([A-Za-z]+)", text)
    if m and m.group(2) in units:
        try:
            value = float(m.group(1)) * units[m.group(2)]
            if math.isfinite(value) and value > 0:
                return value
        except ValueError:
            pass
    fail(f"{flag}: '{text}' is not a positive number with one of the units {', '.join(units)}")


def keyed_normal(seed, peer, draw):
    """Stream(seed, platform).normal(0, peer, draw): host i's speed factor is
    normal(0, i, 0), its bandwidth factor normal(0, i, 1)."""
    return keyed_stream.normal(seed, keyed_stream.PLATFORM, 0, peer, draw)


def host_lines(indent, i, speed, bw, lat):
    # One host and its private link, spelled out so each host can differ.
    # Every digit: the sequential engine computes the same values from the same draws.
    return (f'{indent}<host id="peer-{i}" speed="{speed!r}f"/>\n'
            f'{indent}<link id="peer-{i}_link" bandwidth="{bw!r}Bps" latency="{lat:.6g}s" '
            f'sharing_policy="SPLITDUPLEX"/>\n'
            f'{indent}<host_link id="peer-{i}" up="peer-{i}_link_UP" down="peer-{i}_link_DOWN"/>\n')


def cluster_body(a):
    speed, bw = quantity("--speed", a.speed, FLOPS), quantity("--bw", a.bw, BYTES)
    lat = quantity("--lat", a.lat, SECONDS)
    if a.kind == "cluster" and a.speed_sigma == 0:
        # SimGrid's own <cluster> element: the same topology, a smaller file.
        return (f'  <cluster id="avbench" prefix="peer-" suffix="" radical="0-{a.peers - 1}" speed="{a.speed}"\n'
                f'           bw="{a.bw}" lat="{a.lat}" bb_bw="{a.bb_bw}" bb_lat="{a.bb_lat}"/>\n')
    lines = ['  <zone id="avbench" routing="Cluster">\n']
    for i in range(a.peers):
        s = speed * math.exp(a.speed_sigma * keyed_normal(a.seed, i, 0)) if a.speed_sigma > 0 else speed
        b = bw * math.exp(a.bw_sigma * keyed_normal(a.seed, i, 1)) if a.bw_sigma > 0 else bw
        lines.append(host_lines("    ", i, s, b, lat))
    lines.append(f'    <backbone id="avbench_backbone" bandwidth="{a.bb_bw}" latency="{a.bb_lat}"/>\n')
    lines.append("  </zone>\n")
    return "".join(lines)


def geo_body(a):
    r = a.regions
    first = [k * a.peers // r for k in range(r + 1)]  # region k holds ranks first[k] .. first[k+1]-1
    lines = ['  <zone id="world" routing="Full">\n']
    for k in range(r):
        lines.append(f'    <cluster id="region-{k}" prefix="peer-" suffix="" radical="{first[k]}-{first[k + 1] - 1}" '
                     f'speed="{a.speed}" bw="{a.bw}" lat="{a.lat}" bb_bw="{a.bb_bw}" bb_lat="{a.bb_lat}" '
                     f'router_id="region-{k}-gateway"/>\n')
    pairs = [(k, m) for k in range(r) for m in range(k + 1, r)]
    # SimGrid's DTD wants a zone's resources (clusters, links) before its routes: a
    # <link> after a <zoneRoute> is a parse error, so every WAN link comes first.
    for k, m in pairs:
        lines.append(f'    <link id="wan-{k}-{m}" bandwidth="{a.wan_bw}" latency="{a.wan_lat}"/>\n')
    for k, m in pairs:
        lines.append(f'    <zoneRoute src="region-{k}" dst="region-{m}" gw_src="region-{k}-gateway" '
                     f'gw_dst="region-{m}-gateway"><link_ctn id="wan-{k}-{m}"/></zoneRoute>\n')
    lines.append("  </zone>\n")
    return "".join(lines)


def tag(a, defaults):
    # "keyed": the draws of src/core/rng.hpp (files of the earlier draws may be cached).
    parts = [a.kind, str(a.peers)] + (["keyed"] if a.speed_sigma > 0 or a.bw_sigma > 0 else [])
    for name in ("speed", "bw", "lat", "bb_bw", "bb_lat", "speed_sigma", "bw_sigma", "seed", "regions", "wan_lat",
                 "wan_bw"):
        value = getattr(a, name)
        if value != defaults[name] and (a.kind != "cluster" or name not in ("bw_sigma", "regions", "wan_lat", "wan_bw")):
            parts.append(f"{name.replace('_', '')}-{value:g}" if isinstance(value, float) else f"{name.replace('_', '')}-{value}")
    return "-".join(parts)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="avbench platform", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("peers", type=int)
    p.add_argument("out_dir")
    p.add_argument("--kind", default="cluster", choices=["cluster", "cloud", "geo"])
    p.add_argument("--bw", default="125MBps", help="per-host link bandwidth (1 Gb/s; the median for cloud)")
    p.add_argument("--lat", default="50us", help="per-host link latency")
    p.add_argument("--bb-bw", default="2.25GBps", help="backbone bandwidth")
    p.add_argument("--bb-lat", default="500us", help="backbone latency")
    p.add_argument("--speed", default="1Gf", help="host speed in flop/s (the median when lognormal)")
    p.add_argument("--speed-sigma", type=float, default=None,
                   help="lognormal sigma of host speeds (cluster: default 0, all equal; cloud: default 0.5)")
    p.add_argument("--bw-sigma", type=float, default=None, help="cloud: lognormal sigma of link bandwidths [0.5]")
    p.add_argument("--seed", type=int, default=1, help="seed of the lognormal draws")
    p.add_argument("--regions", type=int, default=4, help="geo: number of regions [4]")
    p.add_argument("--wan-lat", default="40ms", help="geo: latency between regions")
    p.add_argument("--wan-bw", default="1.25GBps", help="geo: bandwidth between regions")
    a = p.parse_args(argv)
    defaults = vars(p.parse_args([str(a.peers), a.out_dir, "--kind", a.kind]))
    for name in ("speed_sigma", "bw_sigma"):
        d = 0.5 if a.kind == "cloud" else 0.0
        if getattr(a, name) is None:
            setattr(a, name, d)
        defaults[name] = d
    if not 0 <= a.seed < 2**64:
        fail(f"--seed: {a.seed} is not an integer in [0, 2^64)")
    if a.peers < 1:
        fail(f"N: {a.peers} is not an integer >= 1")
    for name in ("speed_sigma", "bw_sigma"):
        value = getattr(a, name)
        if not (math.isfinite(value) and value >= 0):
            fail(f"--{name.replace('_', '-')}: {value} is not a finite number >= 0")
    if a.kind != "cloud" and a.bw_sigma != 0:
        fail("--bw-sigma: applies to --kind cloud only")
    if a.kind == "geo" and a.speed_sigma != 0:
        fail("--speed-sigma: applies to --kind cluster or cloud only")
    if a.kind == "geo" and not 1 <= a.regions <= a.peers:
        fail(f"--regions: {a.regions} is not an integer in [1, N = {a.peers}]")
    quantity("--speed", a.speed, FLOPS)
    for flag, text in (("--bw", a.bw), ("--bb-bw", a.bb_bw), ("--wan-bw", a.wan_bw)):
        quantity(flag, text, BYTES)
    for flag, text in (("--lat", a.lat), ("--bb-lat", a.bb_lat), ("--wan-lat", a.wan_lat)):
        quantity(flag, text, SECONDS)
    os.makedirs(a.out_dir, exist_ok=True)
    name = tag(a, defaults)
    xml = os.path.join(a.out_dir, name + ".xml")
    hosts = os.path.join(a.out_dir, name + ".hosts")
    body = geo_body(a) if a.kind == "geo" else cluster_body(a)
    # Write beside, then rename: concurrent test runs may share the cache folder.
    with open(xml + f".{os.getpid()}", "w") as f:
        f.write("<?xml version='1.0'?>\n"
                '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
                '<platform version="4.1">\n' + body + "</platform>\n")
    os.replace(xml + f".{os.getpid()}", xml)
    with open(hosts + f".{os.getpid()}", "w") as f:
        f.write("".join(f"peer-{i}\n" for i in range(a.peers)))
    os.replace(hosts + f".{os.getpid()}", hosts)
    print(xml)
    print(hosts)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
