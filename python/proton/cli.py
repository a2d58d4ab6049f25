"""The ``proton`` command: profile a whole script, module or pytest run.

    proton [options] script.py [args]
    proton [options] pytest [args]
    proton [options] --module NAME [args]     (or a module name: ``proton pkg.train``)
    python -m proton [options] ...

The command owns the session: it starts one before the target runs and finalizes it after,
even when the target raises or calls ``sys.exit``. ``proton.start``/``proton.finalize`` inside
the target are ignored meanwhile (``_flags.command_line``), so scripts written for plain use
run unchanged. The exit status is the target's.
"""

import argparse
import glob
import importlib.util
import os
import runpy
import sys
import traceback

from . import _flags, _ranks
from . import control as _control
from .profile import DEFAULT_PROFILE_NAME
from .profile import finalize as _finalize
from .profile import start as _start

_USAGE = """\
proton [options] script.py [script args]
       proton [options] pytest [pytest args]
       proton [options] --module NAME [module args]
       python -m proton [options] ..."""

_EPILOG = """\
targets:
  script.py        run as __main__, with sys.argv = [script.py, args...] and the script's
                   folder first on sys.path, as `python script.py` would
  pytest           run pytest.main(args) in this process (every test is profiled); pytest
                   must be installed for this Python
  --module NAME    run a module as __main__, as `python -m NAME` would; every argument after
                   NAME is the module's (--help too), so Proton's options go before --module;
                   a bare target that is not a file but names an importable module is run the
                   same way

The session is started before the target and finalized (profile written) after it, also when
the target raises, calls sys.exit() or is interrupted; start()/finalize() calls inside the
target are ignored. The exit status is the target's (1 for an uncaught exception, 130 for
Ctrl-C).

environment:
  PROTON_NVTX=0    do not turn NVTX ranges (nvtxRangePush/Pop) into scopes (on by default)
  PROTON_RANK_PATTERN  per-rank output name (same as --rank-pattern)

many processes (docs/multiprocess.md): put proton after the launcher, so each worker profiles
itself and the launcher writes nothing; each rank writes NAME.rank<R>.hatchet:
  torchrun --nproc-per-node 8 -m proton -n ddp train.py     ddp.rank0.hatchet ... rank7
  srun -n 16 proton -n run train.py                          run.rank0.hatchet ... rank15
  proton-viewer ddp.rank*.hatchet                            merged tree, imbalance column

examples:
  proton -n matmul bench.py --size 4096       writes matmul.hatchet
  proton -c python -k triton train.py         Python call paths, Triton launch metadata
  proton pytest -x tests/test_kernels.py
  proton --idle -n serve server.py            no session; windows from another shell:
                                              proton-ctl window --duration 10s PID
  proton-viewer -m time/ms matmul.hatchet
"""


# Process launchers: proton belongs after them (each worker profiles itself), never before.
_LAUNCHERS = ("torchrun", "srun", "mpirun", "mpiexec")


def _parser():
    p = argparse.ArgumentParser(
        prog="proton",
        usage=_USAGE,
        description="Profile GPU kernels of a Python script, module or pytest run.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("-n", "--name", default=None,
                   help="output path without extension (default: proton -> proton.hatchet)")
    p.add_argument("-b", "--backend", default=None,
                   help="GPU backend: cupti (NVIDIA); default: this machine's")
    p.add_argument("-c", "--context", default="shadow", choices=["shadow", "python"],
                   help="shadow: kernels under proton.scope/state frames (default); "
                        "python: under the Python call path that launched them")
    p.add_argument("-d", "--data", default="tree",
                   help="data kept: tree (default), trace, or tree,trace")
    p.add_argument("-k", "--hook", default=None, choices=["triton"],
                   help="triton: attach each Triton kernel's launch_metadata "
                        "(name, flops*, bytes, ...) to its node")
    p.add_argument("-m", "--mode", default=None, help="backend mode (default: kernel timing)")
    # Hardware counters (docs/counters.md): the mode "counters[:metrics=...]" under its own flags.
    p.add_argument("--counters", action="store_true",
                   help="hardware counters per kernel, default set (same as -m counters)")
    p.add_argument("--counter-metrics", default=None, metavar="A,B,...",
                   help="hardware counters per kernel: these CUPTI metrics "
                        "(same as -m counters:metrics=A,B,...)")
    # Everything after NAME is the module's, as with `python -m NAME ...` (--help included).
    p.add_argument("--module", dest="module", default=None, nargs=argparse.REMAINDER,
                   help="NAME [args]: run module NAME as __main__ (like python -m NAME); "
                        "every argument after NAME is the module's")
    p.add_argument("--no-nvtx", action="store_true",
                   help="do not turn NVTX ranges into scopes (same as PROTON_NVTX=0)")
    p.add_argument("--rank-pattern", default=None, metavar="PATTERN",
                   help="output name of each rank of a multi-process job (default "
                        "'{name}.rank{rank}'; also {world_size} {local_rank} {host})")
    p.add_argument("--advise", action="store_true",
                   help="when the run ends, print the analyzer's top findings on the profile "
                        "(to stderr; all of them: proton-viewer --advise, docs/advise.md); "
                        "also times synchronizes and copies (PROTON_HOST_CALLS=1)")
    p.add_argument("--idle", action="store_true",
                   help="start no session: load idle and profile only in windows, opened by "
                        "proton.schedule/step, proton-ctl or SIGUSR2 (same as PROTON_IDLE=1; "
                        "docs/always-on.md)")
    p.add_argument("--flush-every", default=None, metavar="TIME",
                   help="with --idle: write an open window's tree to its file every TIME "
                        "(e.g. 2s, 500ms) while it records, so a worker killed by SIGKILL "
                        "keeps what it recorded up to the last flush (default: "
                        "PROTON_FLUSH_EVERY)")
    p.add_argument("target", nargs="?", help="script.py, pytest, or a module name")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the target")
    return p


def _split_module_equals(argv: list) -> list:
    """``--module=NAME args`` as ``--module NAME args``, when it comes before the target.

    argparse hands an ``=`` value to a rest-of-the-line option as its only word, so the words
    after it would be parsed as Proton's own.
    """
    # Proton's options that take a value (keep in step with _parser).
    takes_value = {"-n", "--name", "-b", "--backend", "-c", "--context", "-d", "--data",
                   "-k", "--hook", "-m", "--mode", "--counter-metrics", "--rank-pattern"}
    i = 0
    while i < len(argv):
        word = argv[i]
        if word.startswith("--module="):
            return [*argv[:i], "--module", word[len("--module="):], *argv[i + 1:]]
        if word == "--" or not word.startswith("-") or word == "-":
            break  # the target: what follows is its own
        i += 2 if word in takes_value else 1
    return argv


def _exit_code(e: SystemExit) -> int:
    """The status `python script.py` would exit with for this SystemExit."""
    code = e.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _is_module(target: str) -> bool:
    if os.path.exists(target) or target.endswith(".py") or os.sep in target:
        return False
    try:
        return importlib.util.find_spec(target) is not None
    except (ImportError, ValueError):
        return False


def _run_target(kind: str, target: str, args: list) -> int:
    """Runs the target in this process; returns its exit status."""
    saved_argv, saved_path0 = sys.argv, sys.path[0] if sys.path else None
    try:
        if kind == "pytest":
            import pytest

            sys.argv = ["pytest", *args]
            return int(pytest.main(list(args)))
        if kind == "module":
            sys.argv = [target, *args]
            # `python -m` puts the working directory first on sys.path.
            sys.path[0] = os.getcwd()
            runpy.run_module(target, run_name="__main__", alter_sys=True)
            return 0
        sys.argv = [target, *args]
        sys.path[0] = os.path.dirname(os.path.abspath(target))
        runpy.run_path(target, run_name="__main__")
        return 0
    except SystemExit as e:
        return _exit_code(e)
    except KeyboardInterrupt:
        traceback.print_exc()
        return 130
    except BaseException:  # noqa: B902 - the target's error is reported, the profile still kept
        traceback.print_exc()
        return 1
    finally:
        sys.argv = saved_argv
        if saved_path0 is not None and sys.path:
            sys.path[0] = saved_path0


# Findings printed by --advise; proton-viewer --advise lists more.
_ADVISE_TOP = 5


def _profile_paths(name: str) -> list:
    """The tree files this process wrote for session name ``name``."""
    base = _ranks.output_name(name, _ranks.detect())
    paths = [base + ext for ext in (".hatchet", ".hatchet_msgpack") if os.path.isfile(base + ext)]
    if not paths and base.endswith((".hatchet", ".hatchet_msgpack")) and os.path.isfile(base):
        paths = [base]
    # A session that advanced phases writes one file per phase.
    return paths or sorted(glob.glob(glob.escape(base) + ".part_*.hatchet"))


def _print_advice(name: str) -> None:
    """The analyzer's first findings on the profile just written (docs/advise.md), on stderr
    so that the target's own output stays as it was."""
    from . import profiles

    paths = _profile_paths(name)
    if not paths:
        print(f"proton: --advise: no profile to analyze (no {name}.hatchet was written)",
              file=sys.stderr)
    for path in paths:
        try:
            text = profiles.read(path).advice_text(_ADVISE_TOP)
        except ValueError as e:  # ProfileError: an unreadable file is named, never fatal
            print(f"proton: --advise: {e}", file=sys.stderr)
            continue
        print(text, file=sys.stderr, end="")


def main(argv=None) -> int:
    parser = _parser()
    opts = parser.parse_args(_split_module_equals(sys.argv[1:] if argv is None else list(argv)))
    if opts.module is not None:
        if not opts.module or not opts.module[0]:
            parser.error("--module needs a module name: proton [options] --module NAME [args]")
        kind, target, args = "module", opts.module[0], opts.module[1:]
    elif opts.target is None:
        parser.error("nothing to run: give a script, pytest, or --module NAME")
    elif os.path.basename(opts.target) in _LAUNCHERS:
        parser.error(f"put proton after the launcher, not before it: `{opts.target} ... -m proton "
                     "[options] train.py` (torchrun) or `srun ... proton [options] train.py`, "
                     "so each worker profiles itself (docs/multiprocess.md)")
    elif os.path.basename(opts.target) == "pytest":
        kind, target, args = "pytest", opts.target, opts.args
        # Checked before the session starts, so a missing pytest leaves no empty profile.
        if importlib.util.find_spec("pytest") is None:
            parser.error(f"pytest is not installed for this Python ({sys.executable}): "
                         "install it with `pip install pytest`, or run a script or module")
    elif _is_module(opts.target):
        kind, target, args = "module", opts.target, opts.args
    else:
        kind, target, args = "script", opts.target, opts.args
        if not os.path.isfile(target):
            parser.error(f"no such script: {target}")
    if opts.no_nvtx:
        os.environ["PROTON_NVTX"] = "0"
    if opts.rank_pattern is not None:
        try:
            _ranks.output_name("x", _ranks.Rank(0, 2, 0, ""), opts.rank_pattern)
        except ValueError as e:
            parser.error(str(e))
        os.environ[_ranks.PATTERN_ENV] = opts.rank_pattern
    if opts.counters or opts.counter_metrics:
        if opts.mode is not None:
            parser.error("--counters/--counter-metrics and -m/--mode both choose the mode: "
                         "give one")
        opts.mode = "counters" + (f":metrics={opts.counter_metrics}"
                                  if opts.counter_metrics else "")

    if opts.advise:
        # The analyzer's host_sync and sync_copy rules read timed host calls (off by default:
        # the tree stays triton.profiler's); a value the user set wins.
        os.environ.setdefault("PROTON_HOST_CALLS", "1")
    try:
        if opts.idle or _control.idle_requested():
            if opts.hook is not None:
                parser.error("--idle: windows do not take -k/--hook yet")
            socket = _control.idle(opts.name, context=opts.context, data=opts.data,
                                   backend=opts.backend, mode=opts.mode,
                                   flush_every=(opts.flush_every if opts.flush_every is not None
                                                else _control.env_flush_every()))
            print(f"proton: idle; open a window with `proton-ctl start {os.getpid()}` "
                  f"(socket {socket})", file=sys.stderr)
            return _run_target(kind, target, args)  # an open window is written at exit
        if opts.flush_every is not None:
            parser.error("--flush-every flushes windows: give it with --idle (a whole-run "
                         "session flushes with -m periodic_flushing)")
        _start(opts.name, context=opts.context, data=opts.data, backend=opts.backend,
               mode=opts.mode, hook=opts.hook)
    except (ValueError, RuntimeError) as e:
        parser.error(str(e))
    _flags.command_line = True
    status = 1
    try:
        status = _run_target(kind, target, args)
    finally:
        _flags.command_line = False
        try:
            _finalize()
        except Exception as e:  # say why the profile is missing; a failing target's status wins
            print(f"proton: could not write the profile: {e}", file=sys.stderr)
            status = status or 1
        else:
            if opts.advise:
                _print_advice(opts.name or DEFAULT_PROFILE_NAME)
    return status


if __name__ == "__main__":
    sys.exit(main())
