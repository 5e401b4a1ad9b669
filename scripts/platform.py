#!/usr/bin/env python3
"""Writes a SimGrid platform file and a hostfile for N simulated peers.

    scripts/platform.py N OUT_DIR [--bw 125MBps] [--lat 50us] [--speed-sigma S --seed K]

A cluster: one host per peer, each with a private link (bw, lat) to a backbone
(bb_bw, bb_lat), so a peer's messages share only its own link. The two files are
OUT_DIR/cluster-N.xml and OUT_DIR/cluster-N.hosts.

With --speed-sigma S > 0 the host speeds are lognormal: speed * exp(S * z) with z
standard normal, drawn from --seed (the same seed gives the same speeds), written
as OUT_DIR/cluster-N-sigma-S-seed-K.{xml,hosts}. Speeds matter only for work a
program charges explicitly (avbench: --compute-flops, the swarm Poisson clock),
since smpirun.sh does not simulate computation.
"""
import argparse
import math
import os
import random
import sys

UNITS = {"f": 1.0, "kf": 1e3, "Mf": 1e6, "Gf": 1e9, "Tf": 1e12}


def flops_per_second(text):
    for unit in sorted(UNITS, key=len, reverse=True):
        if text.endswith(unit):
            try:
                return float(text[: -len(unit)]) * UNITS[unit]
            except ValueError:
                break
    sys.exit(f"platform.py: error: --speed: '{text}' is not a number with one of the units {', '.join(UNITS)}")


def cluster_xml(a):
    return (f'  <cluster id="avbench" prefix="peer-" suffix="" radical="0-{a.peers - 1}" speed="{a.speed}"\n'
            f'           bw="{a.bw}" lat="{a.lat}" bb_bw="{a.bb_bw}" bb_lat="{a.bb_lat}"/>\n')


def lognormal_cluster_xml(a):
    # The same cluster as <cluster> builds, spelled out so each host has its own
    # speed: a private split-duplex link per host and one backbone.
    median = flops_per_second(a.speed)
    rng = random.Random(a.seed)
    lines = ['  <zone id="avbench" routing="Cluster">\n']
    for i in range(a.peers):
        speed = median * math.exp(a.speed_sigma * rng.gauss(0.0, 1.0))
        lines.append(f'    <host id="peer-{i}" speed="{speed:.6g}f"/>\n')
        lines.append(f'    <link id="peer-{i}_link" bandwidth="{a.bw}" latency="{a.lat}" sharing_policy="SPLITDUPLEX"/>\n')
        lines.append(f'    <host_link id="peer-{i}" up="peer-{i}_link_UP" down="peer-{i}_link_DOWN"/>\n')
    lines.append(f'    <backbone id="avbench_backbone" bandwidth="{a.bb_bw}" latency="{a.bb_lat}"/>\n')
    lines.append("  </zone>\n")
    return "".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("peers", type=int)
    p.add_argument("out_dir")
    p.add_argument("--bw", default="125MBps", help="per-host link bandwidth (1 Gb/s by default)")
    p.add_argument("--lat", default="50us", help="per-host link latency")
    p.add_argument("--bb-bw", default="2.25GBps", help="backbone bandwidth")
    p.add_argument("--bb-lat", default="500us", help="backbone latency")
    p.add_argument("--speed", default="1Gf", help="host speed in flop/s (the median with --speed-sigma)")
    p.add_argument("--speed-sigma", type=float, default=0.0, help="lognormal sigma of host speeds (0: all equal)")
    p.add_argument("--seed", type=int, default=1, help="seed of the host speeds")
    a = p.parse_args()
    if a.peers < 1:
        sys.exit("platform.py: error: N must be >= 1")
    if not (a.speed_sigma >= 0.0 and math.isfinite(a.speed_sigma)):
        sys.exit(f"platform.py: error: --speed-sigma: {a.speed_sigma} is not a finite number >= 0")
    flops_per_second(a.speed)
    os.makedirs(a.out_dir, exist_ok=True)
    tag = f"cluster-{a.peers}"
    if a.speed_sigma > 0:
        tag += f"-sigma-{a.speed_sigma:g}-seed-{a.seed}"
    xml = os.path.join(a.out_dir, tag + ".xml")
    hosts = os.path.join(a.out_dir, tag + ".hosts")
    # Write beside, then rename: concurrent test runs may share the cache folder.
    with open(xml + f".{os.getpid()}", "w") as f:
        f.write(
            "<?xml version='1.0'?>\n"
            '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
            '<platform version="4.1">\n'
            + (lognormal_cluster_xml(a) if a.speed_sigma > 0 else cluster_xml(a))
            + "</platform>\n")
    os.replace(xml + f".{os.getpid()}", xml)
    with open(hosts + f".{os.getpid()}", "w") as f:
        f.write("".join(f"peer-{i}\n" for i in range(a.peers)))
    os.replace(hosts + f".{os.getpid()}", hosts)
    print(xml)
    print(hosts)


if __name__ == "__main__":
    main()
