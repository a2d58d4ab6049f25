"""`proton-viewer` from Python: a thin wrapper over the native binary.

The viewer is C++ (reading, deriving, filtering and drawing all live there); this module only
finds the binary and runs it, so `python -m proton.viewer ...` and `proton.viewer.view(...)`
behave exactly like the command.
"""

import os
import subprocess
import sys
import sysconfig


def _binary() -> str:
    override = os.environ.get("PROTON_VIEWER")
    if override:
        return override
    return os.path.join(sysconfig.get_path("scripts"), "proton-viewer")


def main(argv=None) -> int:
    """Runs proton-viewer with ``argv`` (default: this process's arguments)."""
    args = sys.argv[1:] if argv is None else list(argv)
    return subprocess.call([_binary(), *args])


def view(path: str, *args: str) -> str:
    """Returns what ``proton-viewer [args] path`` prints; raises CalledProcessError on failure."""
    done = subprocess.run([_binary(), *args, str(path)], capture_output=True, text=True,
                          check=True)
    return done.stdout


if __name__ == "__main__":
    sys.exit(main())
