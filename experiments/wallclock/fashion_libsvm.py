#!/usr/bin/python3
"""Two classes of Fashion-MNIST as LIBSVM text files, for sgd_bench --data.

    fashion_libsvm.py OUT_DIR [--classes A,B] [--source DIR]

Reads the IDX files of Debian's dataset-fashion-mnist (default source
/usr/share/datasets/fashion-mnist) and writes OUT_DIR/fashion-A-B.train and
.test: one line per image of class A (label +1) or B (label -1), pixels scaled to
[0, 1], zeros left out (LIBSVM's sparse form), features numbered 1..784. The
default pair, 7 (sneaker) against 9 (ankle boot), gives 12,000 training and 2,000
test images. Prints the two paths. Exit status 2 with one line for a missing or
malformed source.
"""

from __future__ import annotations

import argparse
import gzip
import struct
import sys
from pathlib import Path

import numpy as np

SOURCE = Path("/usr/share/datasets/fashion-mnist")
NAMES = {"train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
         "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")}


def read_idx(path: Path) -> np.ndarray:
    """An IDX file of unsigned bytes (type 0x08), as an array of its dimensions."""
    with gzip.open(path) as f:
        data = f.read()
    if len(data) < 4 or data[:2] != b"\0\0" or data[2] != 0x08:
        raise ValueError(f"{path}: not an IDX file of unsigned bytes")
    ndim = data[3]
    dims = struct.unpack(f">{ndim}I", data[4:4 + 4 * ndim])
    body = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    if body.size != int(np.prod(dims)):
        raise ValueError(f"{path}: {body.size} values, the header says {dims}")
    return body.reshape(dims)


def write_libsvm(path: Path, images: np.ndarray, labels: np.ndarray) -> None:
    with open(path, "w") as out:
        for image, label in zip(images.reshape(len(images), -1), labels):
            nz = np.flatnonzero(image)
            words = " ".join(f"{i + 1}:{image[i] / 255:.6g}" for i in nz)
            out.write(f"{'+1' if label > 0 else '-1'} {words}\n")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--classes", default="7,9", help="two Fashion-MNIST classes, 0..9: +1 and -1")
    ap.add_argument("--source", type=Path, default=SOURCE)
    a = ap.parse_args(argv)
    try:
        pos, neg = (int(c) for c in a.classes.split(","))
        if not (0 <= pos <= 9 and 0 <= neg <= 9 and pos != neg):
            raise ValueError
    except ValueError:
        print(f"fashion_libsvm.py: error: --classes '{a.classes}': two different classes 0..9, as A,B",
              file=sys.stderr)
        return 2
    a.out.mkdir(parents=True, exist_ok=True)
    for part, (images_name, labels_name) in NAMES.items():
        try:
            images, labels = read_idx(a.source / images_name), read_idx(a.source / labels_name)
        except (OSError, ValueError) as e:
            print(f"fashion_libsvm.py: error: --source {a.source}: {e} (apt-get install dataset-fashion-mnist)",
                  file=sys.stderr)
            return 2
        keep = (labels == pos) | (labels == neg)
        path = a.out / f"fashion-{pos}-{neg}.{part}"
        write_libsvm(path, images[keep], np.where(labels[keep] == pos, 1, -1))
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
