#!/usr/bin/python3
"""Writes the hostfile of a SimGrid platform file: its hosts in the file's order.

    platform_hosts.py PLATFORM_XML HOSTFILE

Host i of the file (a <host>'s id, or a <cluster>'s prefix + each number of its
radical + suffix, in document order) becomes line i of HOSTFILE, so that rank i
runs on the host the sequential engine takes as peer i (docs/simulation.md).
scripts/smpirun.sh calls it when the program names its platform file itself.
"""

import os
import sys
import xml.etree.ElementTree as ET


def radical_numbers(radical):
    for part in radical.split(","):
        if "-" in part:
            first, last = part.split("-", 1)
            yield from range(int(first), int(last) + 1)
        else:
            yield int(part)


def hosts(root):
    for element in root.iter():
        if element.tag == "host":
            yield element.get("id")
        elif element.tag == "cluster":
            prefix, suffix = element.get("prefix", ""), element.get("suffix", "")
            for k in radical_numbers(element.get("radical", "")):
                yield f"{prefix}{k}{suffix}"


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: platform_hosts.py PLATFORM_XML HOSTFILE")
    source, target = sys.argv[1], sys.argv[2]
    try:
        names = list(hosts(ET.parse(source).getroot()))
    except (OSError, ET.ParseError, ValueError) as e:
        sys.exit(f"platform_hosts.py: error: {source}: {e}")
    if not names:
        sys.exit(f"platform_hosts.py: error: {source}: no hosts")
    with open(target + f".{os.getpid()}", "w") as f:
        f.write("".join(name + "\n" for name in names))
    os.replace(target + f".{os.getpid()}", target)


if __name__ == "__main__":
    main()
