"""avbench check's value rules: what docs/trace-format.md promises of one trial's
rows, run once for either layout on the Trial that check_layout reads."""

from __future__ import annotations

import numpy as np

from avbench import schema
from avbench.check_layout import LAST_ROW

REL_TOL = 1e-9  # "equal up to rounding" of values computed two ways, relative to the loss scale
DIVERGED_RELATIVE_GAP = 1e6  # no trial diverged at or below it (its limit is not in the trace)
MODEL_COLUMNS = [n for n, promise in schema.VALUE_PROMISES.items() if promise == "model"]  # +inf or NaN once diverged
NONNEGATIVE = ("variance", "error", "mean_drift", "time", "distance", "consensus", "groups", "decode_failures",
               "detection_time")
FROM_ZERO = {"bytes_sent": "cumulative since {}", "time": "cumulative since {}", "detection_time": "no round yet",
             "decode_failures": "nothing was sent yet", "late": "no round was run yet"}  # why row 0 is 0
CUMULATIVE = ("bytes_sent", "time", "detection_time")


def check_trial(t, run) -> dict:
    """Every value rule on trial T (RUN: the run's settings, /optimum, the
    expectations); returns what /summary must repeat of it. Its columns are finite
    where schema.py promises it, never negative, 0 in row 0 and never decreasing
    where cumulative; those that keep these are sound, for the rules that read them."""
    kind, sound = run["kind"], set()
    for name, why in schema.index_problems(kind, t.cols):
        t.say(name, why)
    with np.errstate(invalid="ignore", over="ignore"):
        for name, v in t.cols.items():
            row = schema.promise_violation(name, v)
            t.say(name, row is not None and f"row {row[0]} is {v[row[0]]}, where the format promises a finite value")
            if row is None and not (name in NONNEGATIVE and t.bad(name, v < 0, "negative at row {i} ({v})")):
                t.say(name, name in FROM_ZERO and v[0] != 0 and f"row 0 is {v[0]}, expected 0 (" + FROM_ZERO.get(
                    name, "").format("round 0" if kind == "averaging" else "step 0") + ")")
                if name in CUMULATIVE:  # neighbours compared: np.diff of uint64 would wrap around
                    t.bad(name, v[1:] < v[:-1],
                          lambda i: f"decreases at row {i + 1} ({v[i]} -> {v[i + 1]}); it is cumulative")
                sound.add(name)
        finite = _training(t, run, t.cols["step"].astype(np.int64), t.cols["round"].astype(np.int64)) \
            if kind == "sgd" else None
        _counters(t, run, sound, finite)
        reached = _reach(t, kind)
    unit, want = ("rounds", run["rounds"]) if kind == "averaging" else ("steps", run["steps"])
    last = int(t.cols[schema.ROW_SCALE[kind]][-1])
    if want is not None and last > want:
        t.c.problem(t.length_at, f"ran {last} {unit}, more than the expected {want}")
    elif want is not None and t.info["complete"] == 1 and last != want and t.info.get("diverged") != 1 \
            and not all(r == 1 for r in reached):  # a complete trial stops early only once every target is reached
        t.c.problem(t.length_at, f"complete trial ran {last} {unit}, expected {want}")
    return {**t.info, **{name: t.cols[col][-1] for name, col in LAST_ROW[kind].items()}}


def _counters(t, run, sound, finite) -> None:
    """Peers, groups, late peers, decode failures and detection time against the run."""
    cols, n, q = t.cols, run["n_peers"], run["quantizer"]
    alive, groups, failed, late = cols["alive"], cols["groups"], cols["failed_groups"], cols.get("late")
    t.bad("alive", (alive < 0) | (alive > (np.inf if n is None else n)),
          "row {i} has {alive} alive peers, outside 0..n_peers")
    t.bad("failed_groups", (failed < 0) | (failed > groups), "row {i}: {failed_groups} failed of {groups} groups")
    if late is not None and not t.bad("late", (late < 0) | (late > alive), "row {i}: {late} late of {alive} alive"):
        t.bad("late", (late != 0) & (not run["waits"]), "row {i} counts {late} late peers, but /config's wait is all")
    if "decode_failures" in sound and q != "lattice":  # lattice can fail; uniform8, stochastic:B on non-finite models
        diverging = finite is not None and (q == "uniform8" or q.startswith("stochastic:"))
        why = "fails only on non-finite models and the model columns are finite there" if diverging else \
            f"never fails to decode{' here' if q != 'none' else ''} (only lattice does)"
        t.bad("decode_failures", (np.cumprod(finite).astype(bool) if diverging else True) & (cols["decode_failures"]
              != 0), f"row {{i}} counts {{v}} decode failures, but quantizer {q} {why}")
    if "detection_time" in sound:  # a whole number of timeouts, at most one per round (step) done
        v, timeout, rounds = cols["detection_time"], run["detection_timeout"], cols[schema.ROW_SCALE[run["kind"]]]
        if timeout <= 0:
            t.bad("detection_time", v != 0, "row {i} is {v}, but /config records detection-timeout 0")
            return
        k = v / timeout
        t.bad("detection_time", np.abs(k - np.round(k)) > 1e-9 * np.maximum(k, 1),
              f"row {{i}} is {{v}}, not a whole number of detection timeouts ({timeout})")
        t.bad("detection_time", np.round(k) > rounds,
              lambda i: f"row {i} charges {int(round(k[i]))} detection timeouts in {rounds[i]} rounds")


def _reach(t, kind) -> list:
    """<unit>s_to_<t>: the round of the first row whose variance is below t (the step
    whose relative gap is at or below t), else the cap, the last row's; returns reached_<t>."""
    averaging = kind == "averaging"
    unit, metric, relation = ("round", "variance", "below") if averaging else ("step", "relative_gap", "at or below")
    count, values, reached = t.cols[unit], t.cols[metric], []
    for target, suffix in t.targets:
        name, r = f"{unit}s_to_{suffix}", t.info[f"reached_{suffix}"]
        n, hit = t.info[name], np.nonzero(values < target if averaging else values <= target)[0]
        reached.append(r)
        first = int(count[hit[0]]) if hit.size else None
        t.c.problem(t.info_at(name), None not in (n, r) and (r, n) != ((1, first) if hit.size else (0, int(count[-1])))
                    and (f"{metric} is first {relation} {float(target)!r} at {unit} {first}, but {unit}s_to={n} "
                         f"reached={r}" if hit.size else f"{metric} is never {relation} {float(target)!r}: expected "
                         f"{unit}s_to={int(count[-1])} (the cap) and reached=0, found {unit}s_to={n} reached={r}"))
    return reached


def _training(t, run, step, rnd):
    """A training trial's rows against their steps (at most a round per step, step //
    H; rows every E steps and at the last), rounds (groups and bytes_sent stay put
    after no round, but for geometric local steps or a churn joiner's load at a step s
    with s % H == 0; every peer alive before round 1), divergence and /optimum;
    returns the rows whose model columns are all finite."""
    cols, (h, e, steps, j, peers), n = t.cols, (run[k] for k in ("local_steps", "eval_every", "steps", "join_every",
                                                                  "n_peers")), len(step)
    t.bad("round", rnd > step, "row {i}: {round} rounds after {step} steps (at most one round per step)")
    if h is not None:
        t.bad("round", rnd != step // h, lambda i: f"row {i}: round {rnd[i]} after step {step[i]}, "
                                                   f"expected {step[i] // h} with {h} local steps per round")
    if e is not None and n > 1:
        t.bad("step", step[1:-1] != np.arange(1, n - 1) * e,
              lambda i: f"row {i + 1} is step {step[i + 1]}, expected {(i + 1) * e} (every {e} steps)")
        last, full = int(step[-1]), (n - 1) * e
        t.c.problem(t.length_at, last != full and (not (n - 2) * e < last < full or steps not in (None, last)) and
                    f"last row is step {last}, expected {full}"
                    + (f" or the last step {steps}" if steps is not None else " or the run's last step"))
    groups, sent = cols["groups"], cols["bytes_sent"]
    t.say("groups", groups[0] != 0 and f"row 0 has {groups[0]} groups, expected 0 (no round yet)")
    same = np.concatenate(([False], rnd[1:] == rnd[:-1])) & (not run["geometric"])
    t.bad("groups", same & (groups != 0), "row {i} has {v} groups, but no round ran since the previous row")
    loads = np.concatenate(([False], -(-step[:-1] // j) * j < step[1:])) if j is not None else np.zeros(n, bool)
    t.bad("bytes_sent", same & ~loads & np.concatenate(([False], sent[1:] != sent[:-1])),
          lambda i: f"changes at row {i} ({sent[i - 1]} -> {sent[i]}), but no round ran "
                    f"(SGD steps send nothing{'' if j is None else ', churn loads none then'})")
    if peers is not None:
        t.bad("alive", (rnd == 0) & (cols["alive"] != peers),
              f"row {{i}} has {{v}} alive peers before any round, expected all {peers}")
    ok = np.logical_and.reduce([np.isfinite(cols[k]) for k in MODEL_COLUMNS])
    diverged, far = t.info.get("diverged"), len(ok) > 1 and cols["relative_gap"][-1] > DIVERGED_RELATIVE_GAP
    t.c.problem(t.info_at("diverged"), next((why for wrong, why in (
        (diverged == 0 and not ok.all(), f"0, but row {int(np.argmin(ok))} is not finite"),
        (diverged == 1 and ok[-1] and not far,  # it stops at the first row not finite or far out
         f"1, but the last row is finite with relative gap <= {DIVERGED_RELATIVE_GAP:g}"),
        (diverged == 1 and not ok[:-1].all(),
         f"1, but row {int(np.argmin(ok))} is already not finite (the trial must stop there)")) if wrong), None))
    acc = cols["accuracy"]
    t.bad("accuracy", ~np.isnan(acc) & ((acc < 0) | (acc > 1)), "row {i} is {v}, outside [0, 1]")
    t.say("accuracy", np.isnan(acc).any() and not np.isnan(acc).all() and
          "NaN in some rows only (NaN means the run measures no accuracy)")
    _optimum(t, run["optimum"], ok)
    return ok


def _optimum(t, opt, ok) -> None:
    """Row 0 is x_0 and the gap loss - f* (against /optimum, OPT); accuracy measured
    on its test set; relative_gap = gap / gap[0], or 0 throughout when gap[0] is 0."""
    loss, gap, rel, acc = t.cols["loss"], t.cols["gap"], t.cols["relative_gap"], t.cols["accuracy"]
    scale = opt["scale"] if opt is not None else max(abs(loss[0]), np.finfo(float).tiny)
    if opt is not None and ok[0]:
        f_star, x2, distance, consensus = opt["loss"], opt["x_norm2"], t.cols["distance"][0], t.cols["consensus"][0]
        t.say("loss", abs(loss[0] - opt["initial_loss"]) > REL_TOL * scale and
              f"row 0 is {loss[0]!r}, but /optimum initial_loss is {opt['initial_loss']!r} (row 0 is x_0)")
        t.bad("gap", ok & (np.abs(gap - (loss - f_star)) > REL_TOL * np.maximum(scale, np.abs(loss))),
              lambda i: f"row {i} is {gap[i]!r}, but loss - f* = {loss[i] - f_star!r}")
        t.bad("gap", gap < -REL_TOL * scale, "negative at row {i} ({v!r}) beyond rounding")
        t.say("distance", abs(distance - x2) > REL_TOL * x2 and
              f"row 0 is {distance!r}, but ||x_0 - x*||^2 = ||x*||^2 = {x2!r} (every peer starts at 0)")
        t.say("consensus", consensus > REL_TOL * x2 and
              f"row 0 is {consensus!r}, expected 0 (every peer starts at the same point)")
    if opt is not None:
        t.say("accuracy", (not np.isnan(acc).all() and "measured, but /optimum names no test set (expected NaN)")
              if opt["test_set"] == "" else np.isnan(acc).any() and
              f"NaN, but /optimum says it is measured on {opt['test_set']!r}")
    if not ok[0]:
        return
    if not rel[ok].any():  # relative_gap is 0 throughout when the initial gap is
        t.say("relative_gap", gap[0] > REL_TOL * scale and f"0 throughout, but the initial gap is {gap[0]!r}")
    elif gap[0] <= 0:
        t.say("relative_gap", f"not 0, but the initial gap (gap at row 0) is {gap[0]!r}")
    else:
        t.say("relative_gap", abs(rel[0] - 1) > REL_TOL and f"row 0 is {rel[0]!r}, expected 1 (row 0 is x_0)")
        t.bad("relative_gap", ok & (np.abs(rel * gap[0] - gap) > REL_TOL * (np.abs(gap) + np.abs(rel) * gap[0])),
              lambda i: f"row {i} is {rel[i]!r}, but gap / initial gap = {gap[i] / gap[0]!r}")
