"""Paired comparisons of traces that share seeds (common random numbers).

Every protocol run with the same --seed sees the same trial seeds and, under the
same failure settings, the same failures: trial k of one trace and the trial with
the same seed in another differ only by the protocol (and its settings). The
difference per trial pair removes the noise the two share, so a paired test
finds differences that two independent means hide.

    import avbench
    df = avbench.paired(["allreduce.h5", "moshpit.h5", "gossip.h5"])   # against the first
    df[df["significant"]]

For each trace after the baseline and each target, three metrics are paired:
the rounds (steps, for training traces) until the target was first reached, the
bytes per peer sent by then, and the time by then (the engine's own time:
simulated, estimated or wall seconds). A trial that never reached a target counts
at its last row (the cap), as the tables do; the `unreached` columns say how many
pairs hold such a trial, and a difference that involves them is a bound, not a
value. The confidence interval is Student's t over the pair differences; the
test is the paired t-test (two-sided), `significant` when its p-value is below
1 - confidence.

Pairing is refused (PairingError, one line naming the traces and why) when the
traces cannot share their noise: different peer counts, engines or run kinds, no
complete trial seed in common, failures that differ (the alive count of some
round of a paired trial), or different straggler or detection settings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import h5py
import numpy as np

from avbench.compare import label_of
from avbench.trials import all_trial_columns

# Settings that change a trial's noise without showing in its alive counts, with
# the value a trace that does not record one ran with.
NOISE_SETTINGS = {"stragglers": "0", "straggler-slowdown": "4", "straggler-sigma": "0", "detection-timeout": "0"}
METRICS = ("rounds", "bytes_per_peer", "time")


class PairingError(ValueError):
    """Two traces whose trials cannot be paired; the message says why."""


@dataclass
class Trace:
    """What pairing needs of one trace: per complete trial (by seed), the rows."""
    path: str
    label: str
    kind: str
    engine: str
    peers: int
    noise: dict
    counter: str  # the row counter that targets are counted in: round or step
    targets: list  # (suffix, value)
    trials: dict  # seed -> {column: array}


def read(path: str) -> Trace:
    """The trace's complete trials, keyed by seed."""
    with h5py.File(path, "r") as f:
        kind = str(f.attrs.get("run_kind", "averaging"))
        counter, metric = ("round", "variance") if kind == "averaging" else ("step", "relative_gap")
        config = f["config"]
        noise = {k: str(config.attrs.get(k, default)) for k, default in NOISE_SETTINGS.items()}
        if float(noise["stragglers"]) == 0:
            noise.pop("straggler-slowdown")  # no straggler: its slowdown does nothing
        summary = f["summary"]
        prefix = "rounds_to_" if kind == "averaging" else "steps_to_"
        suffixes = sorted((k[len(prefix):] for k in summary if k.startswith(prefix)), key=float, reverse=True)
        # Row k of /summary is the k-th trial written, in either layout of /trials.
        rows = all_trial_columns(f, (counter, metric, "alive", "bytes_sent", "time"))
        trials = {int(seed): cols for seed, complete, cols in zip(summary["seed"][()], summary["complete"][()], rows)
                  if complete == 1}
        return Trace(path, label_of(config), kind, str(f.attrs["engine"]), int(f.attrs["n_peers"]), noise,
                     counter, [(s, float(s)) for s in suffixes], trials)


def check_pairable(a: Trace, b: Trace) -> list:
    """The seeds both traces hold complete trials of; PairingError when the two
    cannot be paired."""
    def refuse(why):
        raise PairingError(f"cannot pair {b.path} with {a.path}: {why}")
    for what in ("kind", "engine", "peers"):
        if getattr(a, what) != getattr(b, what):
            refuse(f"{what} {getattr(b, what)} against {getattr(a, what)}")
    for key in sorted(set(a.noise) | set(b.noise)):
        if a.noise.get(key) != b.noise.get(key):
            refuse(f"--{key} {b.noise.get(key)} against {a.noise.get(key)}")
    seeds = [s for s in a.trials if s in b.trials]
    if not seeds:
        refuse("no complete trial seed in common (run both with the same --seed)")
    for seed in seeds:
        alive_a, alive_b = a.trials[seed]["alive"], b.trials[seed]["alive"]
        n = min(len(alive_a), len(alive_b))
        differ = np.nonzero(alive_a[:n] != alive_b[:n])[0]
        if differ.size:
            i = int(differ[0])
            refuse(f"their failures differ: the trial of seed {seed} has {alive_b[i]} peers alive in row {i}, "
                   f"against {alive_a[i]} (same --fail-rate, --failure and --availability?)")
    return seeds


def at_target(trial: dict, counter: str, metric: str, target: float, strict: bool):
    """(rounds, bytes, time, reached) when the trial first reached the target; its
    last row when it never did."""
    values = trial[metric]
    hit = np.nonzero(values < target if strict else values <= target)[0]
    i = int(hit[0]) if hit.size else len(values) - 1
    return float(trial[counter][i]), float(trial["bytes_sent"][i]), float(trial["time"][i]), bool(hit.size)


def paired_stats(d, confidence: float) -> tuple:
    """(mean, low, high, p) of the differences d: Student's t interval and the
    two-sided paired t-test; with no spread, an exact interval and p 1 or 0."""
    from scipy import stats
    d = np.asarray(d, dtype=float)
    mean = float(d.mean())
    se = float(d.std(ddof=1) / math.sqrt(d.size)) if d.size > 1 else math.nan
    if d.size < 2:
        return mean, math.nan, math.nan, math.nan
    if se == 0:
        return mean, mean, mean, 1.0 if mean == 0 else 0.0
    half = float(stats.t.ppf(0.5 + confidence / 2, d.size - 1)) * se
    p = float(2 * stats.t.sf(abs(mean) / se, d.size - 1))
    return mean, mean - half, mean + half, p


def _rows(a: Trace, b: Trace, seeds, confidence: float):
    metric, strict = ("variance", True) if a.kind == "averaging" else ("relative_gap", False)
    for suffix, target in a.targets:
        if suffix not in dict(b.targets):
            continue
        pa = [at_target(a.trials[s], a.counter, metric, target, strict) for s in seeds]
        pb = [at_target(b.trials[s], b.counter, metric, target, strict) for s in seeds]
        unreached = sum(1 for x, y in zip(pa, pb) if not (x[3] and y[3]))
        for m, name in enumerate(METRICS):
            scale = a.peers if name == "bytes_per_peer" else 1
            d = [(y[m] - x[m]) / scale for x, y in zip(pa, pb)]
            mean, low, high, p = paired_stats(d, confidence)
            yield {"trace": b.path, "label": b.label, "baseline": a.path, "baseline_label": a.label,
                   "metric": name if name != "rounds" or a.kind == "averaging" else "steps", "target": target,
                   "pairs": len(seeds), "baseline_mean": float(np.mean([x[m] for x in pa])) / scale,
                   "mean_difference": mean, "ci_low": low, "ci_high": high, "p_value": p,
                   "significant": bool(p < 1 - confidence), "unreached": unreached}


def paired(paths, baseline: int = 0, confidence: float = 0.95):
    """Paired differences of every trace against paths[baseline], as a pandas
    DataFrame (one row per trace, target and metric). Raises PairingError when a
    trace cannot be paired with the baseline, ValueError on bad arguments."""
    import pandas as pd
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), is {confidence}")
    traces = [read(p) for p in paths]
    if not 0 <= baseline < len(traces):
        raise ValueError(f"baseline {baseline} is not a trace's index (0..{len(traces) - 1})")
    base = traces[baseline]
    rows = []
    for i, t in enumerate(traces):
        if i != baseline:
            rows += list(_rows(base, t, check_pairable(base, t), confidence))
    return pd.DataFrame(rows, columns=["trace", "label", "baseline", "baseline_label", "metric", "target", "pairs",
                                       "baseline_mean", "mean_difference", "ci_low", "ci_high", "p_value",
                                       "significant", "unreached"])
