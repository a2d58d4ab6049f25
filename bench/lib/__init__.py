"""Helpers shared by the bench scripts: resident memory (rss), child processes (proc), result
files (results) and the machine a run was made on (machine).

The scripts run as `python3 bench/<script>.py`, which puts bench/ first on sys.path, so they
import these as `from lib import rss`; a probe under bench/probes/ first adds bench/ itself
(`lib.BENCH` is that folder, for children that must import lib too).
"""

import pathlib

BENCH = pathlib.Path(__file__).resolve().parent.parent
ROOT = BENCH.parent
