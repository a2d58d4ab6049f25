"""Wrong arguments to the profiling API: triton.profiler's answer beside Proton's.

Each case runs in a fresh interpreter per profiler, in an empty folder: a session is started
first (unless the case is about start() or about having none), then the bad call is made, then
everything is finalized. Printed per case: the exception's type (and bases), its message (first
line, and how many lines it had) and the files left in the folder.

    python bench/probes/api_errors_triton.py            # on a GPU machine with triton 3.6
    PROBE_BACKEND=cupti python bench/probes/api_errors_triton.py   # no GPU: name the backend
    python bench/probes/api_errors_triton.py --json out.json

Without Triton, only Proton's column is filled.
"""

import argparse
import json
import subprocess
import sys
import tempfile

# name -> (needs a session first, code run with `p` the profiler module, `types` imported)
CASES = {
    "scope(None)": (True, "with p.scope(None): pass"),
    "scope(123)": (True, "with p.scope(123): pass"),
    "scope(None), no session": (False, "with p.scope(None): pass"),
    "scope('s', metrics=[1])": (True, "with p.scope('s', [1]): pass"),
    "scope('s', metrics='abc')": (True, "with p.scope('s', 'abc'): pass"),
    "scope('s', metrics=0)": (True, "with p.scope('s', 0): pass"),
    "scope('s', metrics=MappingProxyType)": (
        True, "with p.scope('s', types.MappingProxyType({'m': 1})): pass"),
    "enter_scope('s', metrics=[('a', 1)])": (True, "p.enter_scope('s', metrics=[('a', 1)])"),
    "enter_scope(None)": (True, "p.enter_scope(None)"),
    "exit_scope(7)": (True, "p.enter_scope('s'); p.exit_scope(7)"),
    "state(None)": (True, "with p.state(None): pass"),
    "state(123)": (True, "with p.state(123): pass"),
    "enter_state(None)": (True, "p.enter_state(None)"),
    "start(backend='bogus')": (False, "p.start('probe', backend='bogus')"),
    "start(backend='roctracer')": (False, "p.start('probe', backend='roctracer')"),
    "start(name='')": (False, "p.start('', backend=BACKEND)"),
    "start(name='out/')": (False, "os.mkdir('out'); p.start('out/', backend=BACKEND)"),
    "start(name=123)": (False, "p.start(123, backend=BACKEND)"),
    "start(context='bogus')": (False, "p.start('probe', context='bogus', backend=BACKEND)"),
    "start(context=1)": (False, "p.start('probe', context=1, backend=BACKEND)"),
    "start(data='bogus')": (False, "p.start('probe', data='bogus', backend=BACKEND)"),
    "start(hook='bogus')": (False, "p.start('probe', hook='bogus', backend=BACKEND)"),
}

CHILD = r"""
import json, os, sys, types
which, case_code, session_first = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
BACKEND = os.environ.get("PROBE_BACKEND") or None
if which == "triton":
    import triton.profiler as p
else:
    import proton as p
out = {"setup": None, "error": None}
if session_first:
    try:
        p.start("probe_session", backend=BACKEND)
    except BaseException as e:
        out["setup"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
try:
    exec(case_code, {"p": p, "types": types, "os": os, "BACKEND": BACKEND})
except BaseException as e:
    text = str(e)
    out["error"] = {"type": type(e).__name__,
                    "bases": [c.__name__ for c in type(e).__mro__[1:-2]],
                    "first_line": text.splitlines()[0] if text else "",
                    "lines": len(text.splitlines())}
try:
    p.finalize()
except BaseException as e:
    out["finalize"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
files = []
for root, dirs, names in os.walk("."):
    files += [os.path.join(root, n)[2:] for n in names]
out["files"] = sorted(files)
print("RESULT=" + json.dumps(out))
"""


def run_case(which, code, session_first):
    with tempfile.TemporaryDirectory() as d:
        flag = "1" if session_first else "0"
        r = subprocess.run([sys.executable, "-c", CHILD, which, code, flag], cwd=d,
                           capture_output=True, text=True, timeout=300)
    line = next((x for x in r.stdout.splitlines() if x.startswith("RESULT=")), None)
    if line is None:
        tail = (r.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"crashed": f"exit {r.returncode}: {tail}"}
    return json.loads(line[len("RESULT="):])


def describe(result):
    if result is None:
        return "(not installed)"
    if "crashed" in result:
        return "CRASHED " + result["crashed"]
    parts = []
    if result.get("setup"):
        parts.append(f"[setup failed: {result['setup']}]")
    e = result["error"]
    if e is None:
        parts.append("no error")
    else:
        bases = f" ({', '.join(e['bases'])})" if e["bases"] else ""
        more = f" [+{e['lines'] - 1} lines]" if e["lines"] > 1 else ""
        parts.append(f"{e['type']}{bases}: {e['first_line'][:110]}{more}")
    files = [f for f in result["files"] if not f.startswith("probe_session")]
    if files:
        parts.append(f"files: {files}")
    return " | ".join(parts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="also write the raw results here")
    ap.add_argument("-k", default="", help="only cases whose name contains this")
    args = ap.parse_args()
    try:
        import triton.profiler  # noqa: F401
        import triton

        impls = ["triton", "proton"]
        print(f"triton {triton.__version__}", file=sys.stderr)
    except Exception:
        impls = ["proton"]
    results = {}
    for name, (session_first, code) in CASES.items():
        if args.k not in name:
            continue
        results[name] = {which: run_case(which, code, session_first) for which in impls}
        print(f"\n{name}")
        for which in ("triton", "proton"):
            print(f"  {which:7s} {describe(results[name].get(which))}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
