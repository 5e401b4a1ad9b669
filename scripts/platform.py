#!/usr/bin/env python3
"""Writes a SimGrid platform file and a hostfile for N simulated peers.

    scripts/platform.py N OUT_DIR [--bw 125MBps] [--lat 50us]

Homogeneous cluster: one host per peer, each with a private link (bw, lat) to a
backbone (bb_bw, bb_lat), so a peer's messages share only its own link. The two
files are OUT_DIR/cluster-N.xml and OUT_DIR/cluster-N.hosts.
"""
import argparse
import os
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("peers", type=int)
    p.add_argument("out_dir")
    p.add_argument("--bw", default="125MBps", help="per-host link bandwidth (1 Gb/s by default)")
    p.add_argument("--lat", default="50us", help="per-host link latency")
    p.add_argument("--bb-bw", default="2.25GBps", help="backbone bandwidth")
    p.add_argument("--bb-lat", default="500us", help="backbone latency")
    p.add_argument("--speed", default="1Gf", help="host speed in flop/s")
    a = p.parse_args()
    if a.peers < 1:
        sys.exit("platform.py: error: N must be >= 1")
    os.makedirs(a.out_dir, exist_ok=True)
    tag = f"cluster-{a.peers}"
    xml = os.path.join(a.out_dir, tag + ".xml")
    hosts = os.path.join(a.out_dir, tag + ".hosts")
    # Write beside, then rename: concurrent test runs may share the cache folder.
    with open(xml + f".{os.getpid()}", "w") as f:
        f.write(
            "<?xml version='1.0'?>\n"
            '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
            '<platform version="4.1">\n'
            f'  <cluster id="avbench" prefix="peer-" suffix="" radical="0-{a.peers - 1}" speed="{a.speed}"\n'
            f'           bw="{a.bw}" lat="{a.lat}" bb_bw="{a.bb_bw}" bb_lat="{a.bb_lat}"/>\n'
            "</platform>\n")
    os.replace(xml + f".{os.getpid()}", xml)
    with open(hosts + f".{os.getpid()}", "w") as f:
        f.write("".join(f"peer-{i}\n" for i in range(a.peers)))
    os.replace(hosts + f".{os.getpid()}", hosts)
    print(xml)
    print(hosts)


if __name__ == "__main__":
    main()
