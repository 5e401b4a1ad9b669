"""The avbench checkout the tools work in: its programs (build/apps,
build-smpi/apps), scripts/smpirun.sh and the Slurm templates (scripts/slurm).

AVB_ROOT names it (scripts/avbench sets it); without it, the checkout this
package lies in (python/avbench), else the current folder.
"""
import os
from pathlib import Path


def _root() -> Path:
    if os.environ.get("AVB_ROOT"):
        return Path(os.environ["AVB_ROOT"]).resolve()
    here = Path(__file__).resolve().parents[2]
    if (here / "scripts" / "smpirun.sh").is_file():
        return here
    return Path.cwd()


ROOT = _root()
