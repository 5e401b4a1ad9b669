"""The project's keyed random stream (src/core/rng.hpp) in plain Python, bit for bit.

A draw is a function of (seed, stream, round, peer, draw): one Philox4x64-10 block
with counter (round, peer, draw, 0) and key (seed, stream). The scripts that must
agree with the C++ draws (avbench platform's hosts, avbench availability's keyed churn) use
this module, so the same seed gives the same hosts and the same failures.
"""
import math

MASK = 2**64 - 1

# StreamId values (src/core/rng.hpp): part of the reproducibility contract.
TRIAL_SEEDS = 10
CHURN = 16
PLATFORM = 17
AVAILABILITY = 18


def philox4x64(counter, key):
    """Random123's Philox4x64-10 (what src/core/rng.cpp calls): 10 rounds of two
    64-bit multiplications, the key bumped by Weyl constants between rounds."""
    c, k = list(counter), list(key)
    for r in range(10):
        if r:
            k = [(k[0] + 0x9E3779B97F4A7C15) & MASK, (k[1] + 0xBB67AE8584CAA73B) & MASK]
        p0, p1 = 0xD2E7470EE14C6C93 * c[0], 0xCA5A826395121157 * c[2]
        c = [(p1 >> 64) ^ c[1] ^ k[0], p1 & MASK, (p0 >> 64) ^ c[3] ^ k[1], p0 & MASK]
    return c


def bits(seed, stream, rnd, peer, draw):
    """Stream(seed, stream).bits(rnd, peer, draw)."""
    return philox4x64([rnd, peer, draw, 0], [seed, stream])[0]


def uniform(seed, stream, rnd, peer, draw):
    """Stream::uniform: [0, 1), 53 bits."""
    return (bits(seed, stream, rnd, peer, draw) >> 11) * 2.0**-53


def uniform_open0(seed, stream, rnd, peer, draw):
    """Stream::uniform_open0: (0, 1], 53 bits."""
    return ((bits(seed, stream, rnd, peer, draw) >> 11) + 1) * 2.0**-53


def normal(seed, stream, rnd, peer, draw):
    """Stream::normal: Box-Muller (cosine branch) on one block, the same libm calls."""
    words = philox4x64([rnd, peer, draw, 0], [seed, stream])
    u1 = ((words[0] >> 11) + 1) * 2.0**-53
    u2 = (words[1] >> 11) * 2.0**-53
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


def trial_seed(seed, trial):
    """avb::trial_seed: the seed of trial `trial` of a run seeded `seed`."""
    return bits(seed, TRIAL_SEEDS, trial, 0, 0)
