"""What a run was made on: GPU, host, versions, commit and date."""

import datetime
import os
import platform
import subprocess
import sys

from lib import BENCH, ROOT


def gpu_name(index=0):
    """The GPU's name as torch reports it (imports torch), or None without one."""
    try:
        import torch

        return torch.cuda.get_device_name(index) if torch.cuda.is_available() else None
    except ImportError:
        return None


def versions(modules=("torch", "triton", "proton")):
    """{module: version} of those already imported."""
    found = {}
    for module in modules:
        mod = sys.modules.get(module)
        if mod is not None:
            found[module] = getattr(mod, "__version__", "?")
    return found


def git_commit():
    """This tree's short commit; PROTON_COMMIT names it where the tree is a copy inside another
    checkout (whose HEAD git would report instead). None when unknown."""
    if os.environ.get("PROTON_COMMIT"):
        return os.environ["PROTON_COMMIT"]
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=BENCH, text=True,
                             capture_output=True, timeout=10).stdout.strip()
        if not top or os.path.realpath(top) != str(ROOT):
            return None  # not this tree's own repository
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=BENCH, text=True,
                             capture_output=True, timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def today():
    return datetime.date.today().isoformat()


def describe(gpu=True):
    """{date, host, commit, versions[, gpu]} for a result file's header."""
    info = {"date": today(), "host": platform.node(), "commit": git_commit(),
            "versions": versions()}
    if gpu:
        info["gpu"] = gpu_name()
    return info
