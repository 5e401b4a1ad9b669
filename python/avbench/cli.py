"""The `avbench` command: the project's tools, one subcommand each.

    avbench COMMAND [ARGS...]      (avbench COMMAND --help: its own usage)

From a checkout without installing the package: scripts/avbench COMMAND ...
"""
import argparse
import importlib
import sys


class OneLineParser(argparse.ArgumentParser):
    """The tools' argument parser: bad input is one line, "PROG: error: ...", and exit 2."""

    def error(self, message: str):
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(2)

# command -> (module, what it does); each module has main(argv) -> exit status.
COMMANDS = {
    "sweep": ("avbench.sweep_driver", "run a table of runs: a pool of jobs, or a Slurm job array (docs/sweeps.md)"),
    "aggregate": ("avbench.aggregate", "one CSV row per trace of a sweep, with means and standard errors"),
    "compare": ("avbench.compare", "one line per trace: rounds to each target, bytes, time"),
    "export": ("avbench.export", "write traces' rows (or per-trial summaries) as CSV, or a trace as netCDF"),
    "check": ("avbench.check", "validate a trace against the schema (docs/trace-format.md)"),
    "platform": ("avbench.platforms", "write a SimGrid platform and hostfile: cluster, cloud or geo"),
    "availability": ("avbench.availability", "write an availability trace for --availability (docs/failures.md)"),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [f"  {name:<{width}}  {what}" for name, (_, what) in COMMANDS.items()]
    return "usage: avbench COMMAND [ARGS...]\n\ncommands:\n" + "\n".join(lines) + \
        "\n\n`avbench COMMAND --help` prints a command's own usage."


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0 if argv else 2
    if argv[0] not in COMMANDS:
        print(f"avbench: error: unknown command '{argv[0]}' (accepted: {', '.join(COMMANDS)})", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[argv[0]][0])
    return module.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
