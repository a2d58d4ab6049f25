"""Result files: `<date>-<gpu>-<what>[-<tag>].{json,md}` in an output folder (bench/results by
default), the .json the full record and the .md the table that was read."""

import json
import pathlib
import re

from lib import BENCH
from lib.machine import today

DEFAULT_DIR = BENCH / "results"


def slug(text):
    """'NVIDIA H100 80GB HBM3' -> 'nvidia-h100-80gb-hbm3'."""
    return re.sub(r"[^a-z0-9]+", "-", (text or "unknown-gpu").lower()).strip("-")


def stem(out_dir, gpu, what="", tag="", date=None):
    """out_dir/<date>-<gpu>[-<what>][-<tag>], without a suffix."""
    parts = [date or today(), slug(gpu)] + [p for p in (what, tag) if p]
    return pathlib.Path(out_dir) / "-".join(parts)


def write(path_stem, data=None, markdown=None, indent=1):
    """Writes <stem>.json and/or <stem>.md (creating the folder); returns the stem."""
    path_stem = pathlib.Path(path_stem)
    path_stem.parent.mkdir(parents=True, exist_ok=True)
    if data is not None:
        write_json(path_stem.with_suffix(".json"), data, indent)
    if markdown is not None:
        path_stem.with_suffix(".md").write_text(markdown)
    return path_stem


def write_json(path, data, indent=1):
    pathlib.Path(path).write_text(json.dumps(data, indent=indent, default=str) + "\n")


def table(columns, rows):
    """A markdown table: the header, its rule, one line per row of cells."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines
