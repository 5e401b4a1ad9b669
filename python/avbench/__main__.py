"""python3 -m avbench COMMAND ...: the `avbench` command (avbench/cli.py)."""
import sys

from avbench.cli import main

sys.exit(main())
