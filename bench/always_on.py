"""Always on: what idle Proton costs a program, and how fast windows open and close.

    python3 bench/always_on.py [--out DIR] [--rounds 3] [--windows 50] [--quick]

Two parts, in one run:

1. Tiny launches. A loop of one-element `x.add_(1)` launches (5,000 per timed region, each
   region between two synchronizations), in fresh processes that take turns, round after round:
   - `none`: no profiler (proton never imported);
   - `idle`: the same script under `proton --idle` (control socket and toggle signal ready,
     no session, so no CUPTI);
   - `floor`: CUPTI kernel-activity tracing alone (the bench module's `_floor_start`, as in
     bench/run.py): what any profiler that records kernel times pays; skipped without the
     bench module;
   - `window`: under `proton --idle` with a window open (Proton recording): for scale.
   A run's time is the lower quartile of its regions (noise only adds time to a launch-bound
   loop; docs/bench.md); a variant's the median of its runs.
2. Windows. One process under `proton --idle` runs the loop for good (inside a scope) while this
   script opens and closes `--windows` windows through its control socket, 20 ms each:
   - open: from sending `start` to the reply, which comes once the window's session runs
     (on a GPU: CUPTI subscribed);
   - close: from sending `stop` to the reply, which comes once the window's file is written
     (checked: the file exists when the reply arrives);
   - the same two through the `proton-ctl` command (its process start included), 5 times;
   - the process's resident memory and open descriptors (/proc) before the first window and
     after windows 1, 10 and the last.

Without a GPU (or with --cpu) the launches are CPU tensor adds, `floor` is skipped, and windows
record the loop's CPU scope: a reduced run that still measures idle against none and the
control path. Writes <date>-<gpu>-always-on.{json,md} to --out (bench/results by default).
"""

import argparse
import json
import os
import pathlib
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from lib import machine, proc  # noqa: E402
from lib import results as result_files  # noqa: E402

VARIANTS = ("none", "idle", "floor", "window")
RESULT = "RESULT "
CHILD_TIMEOUT_S = 300
WINDOW_MS = 20


# -- the child: one process, one variant --------------------------------------------------------


def _device(cpu):
    import torch

    return "cuda" if torch.cuda.is_available() and not cpu else "cpu"


def _sync(device):
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def child_launches(cfg):
    """Times regions of tiny launches under cfg["variant"]; prints one RESULT line."""
    import torch

    device = _device(cfg["cpu"])
    x = torch.zeros(1, device=device)
    launches, regions, warmup = cfg["launches"], cfg["regions"], cfg["warmup"]
    variant = cfg["variant"]
    note = None
    if variant == "floor":
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import variants

        try:
            variants.bench_module()._floor_start()
        except (variants.Unavailable, ImportError, RuntimeError) as e:
            print(RESULT + json.dumps({"skipped": str(e)}), flush=True)
            return
    elif variant == "window":
        import proton

        proton.control.open_window()
    elif variant == "idle":
        from proton import _proton

        note = {"sessions": _proton.has_sessions()}  # idle: must be False
    times = []
    for i in range(warmup + regions):
        _sync(device)
        t0 = time.perf_counter()
        for _ in range(launches):
            x.add_(1)
        _sync(device)
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    if variant == "floor":
        variants.bench_module()._floor_stop()
    elif variant == "window":
        import proton

        proton.control.close_window()
    q1 = statistics.quantiles(times, n=4, method="inclusive")[0] if len(times) > 1 else times[0]
    print(RESULT + json.dumps({"device": device, "ns_per_launch": q1 / launches * 1e9,
                               "regions_s": times, "note": note}), flush=True)


def child_target(cfg):
    """Runs the loop for good under `proton --idle`, in a scope, until the stop file exists."""
    import proton

    device = _device(cfg["cpu"])
    import torch

    x = torch.zeros(1, device=device)
    stop = cfg["stop"]
    print("ready", flush=True)
    while not os.path.exists(stop):
        with proton.scope("loop"):
            for _ in range(200):
                x.add_(1)
            _sync(device)


# -- the parent ---------------------------------------------------------------------------------


def launch_run(variant, cfg, work):
    """One fresh process of `variant`; its RESULT (or {"error": ...})."""
    me = os.path.abspath(__file__)
    child_cfg = dict(cfg, variant=variant)
    args = [me, "--child", json.dumps(child_cfg)]
    if variant in ("idle", "window"):
        cmd = [sys.executable, "-m", "proton", "--idle", "-n", str(work / f"{variant}"), *args]
    else:
        cmd = [sys.executable, *args]
    env = proc.env_with_bench(dict(os.environ, PROTON_CONTROL_DIR=str(work / "run")))
    env.pop("PROTON_IDLE", None)
    return proc.json_result(cmd, timeout=CHILD_TIMEOUT_S, marker=RESULT, env=env, cwd=work)


def launches_part(cfg, rounds, work):
    runs = {v: [] for v in VARIANTS}
    skipped = {}
    for r in range(rounds):
        order = VARIANTS[r % len(VARIANTS):] + VARIANTS[:r % len(VARIANTS)]
        for variant in order:
            if variant in skipped or (variant == "floor" and cfg["cpu"]):
                skipped.setdefault(variant, "no GPU: the CUPTI floor needs one")
                continue
            got = launch_run(variant, cfg, work)
            if "skipped" in got:
                skipped[variant] = got["skipped"]
            elif "error" in got:
                runs[variant].append(got)
                print(f"  {variant}: {got['error'][:300]}", file=sys.stderr)
            else:
                runs[variant].append(got)
                print(f"  round {r} {variant}: {got['ns_per_launch']:.0f} ns/launch",
                      file=sys.stderr)
    summary = {}
    for variant in VARIANTS:
        ok = [g["ns_per_launch"] for g in runs[variant] if "ns_per_launch" in g]
        summary[variant] = {"ns_per_launch": statistics.median(ok) if ok else None,
                            "runs": runs[variant], "skipped": skipped.get(variant)}
    base = summary["none"]["ns_per_launch"]
    for variant in VARIANTS:
        v = summary[variant]["ns_per_launch"]
        summary[variant]["vs_none"] = v / base if v and base else None
    return summary


def ask(sock_path, line, timeout=120):
    """One request on the control socket: the reply line and the seconds it took."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        t0 = time.perf_counter()
        s.connect(sock_path)
        s.sendall(line.encode() + b"\n")
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            reply += chunk
        return reply.decode().strip(), time.perf_counter() - t0


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


def fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def pct(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(q * (len(s) - 1) + 0.5))] if s else None


def windows_part(cfg, n_windows, work):
    run_dir = work / "run"
    stop = work / "stop_target"
    env = proc.env_with_bench(dict(os.environ, PROTON_CONTROL_DIR=str(run_dir)))
    env.pop("PROTON_IDLE", None)
    me = os.path.abspath(__file__)
    target = subprocess.Popen(
        [sys.executable, "-m", "proton", "--idle", "-n", str(work / "win"), me, "--target",
         json.dumps(dict(cfg, stop=str(stop)))], cwd=work, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    out = {"windows": n_windows, "window_ms": WINDOW_MS}
    try:
        if target.stdout.readline().strip() != "ready":
            raise RuntimeError("the target did not start: " + target.stderr.read()[-2000:])
        sock = str(run_dir / f"{target.pid}.sock")
        deadline = time.monotonic() + 60
        while not os.path.exists(sock):
            if time.monotonic() > deadline:
                raise RuntimeError("no control socket")
            time.sleep(0.01)
        time.sleep(0.2)  # a few loops in, idle
        memory = {"idle": (rss_kb(target.pid), fds(target.pid))}
        opens, closes, missing = [], [], 0
        for i in range(n_windows):
            reply, t_open = ask(sock, "start")
            if not reply.startswith("ok "):
                raise RuntimeError(f"start: {reply}")
            time.sleep(WINDOW_MS / 1000)
            reply, t_close = ask(sock, "stop")
            if not reply.startswith("ok "):
                raise RuntimeError(f"stop: {reply}")
            missing += not os.path.exists(reply[3:])  # written before the reply
            opens.append(t_open * 1e3)
            closes.append(t_close * 1e3)
            if i + 1 in (1, 10, n_windows):
                time.sleep(0.05)  # the server closes its end of the connection after replying
                memory[f"after {i + 1}"] = (rss_kb(target.pid), fds(target.pid))
        ctl = shutil.which("proton-ctl", path=os.path.dirname(sys.executable)) or shutil.which(
            "proton-ctl")
        ctl_open, ctl_close = [], []
        if ctl:
            for _ in range(5):
                t0 = time.perf_counter()
                subprocess.run([ctl, "start", str(target.pid)], env=env, check=True,
                               capture_output=True, timeout=120)
                ctl_open.append((time.perf_counter() - t0) * 1e3)
                time.sleep(WINDOW_MS / 1000)
                t0 = time.perf_counter()
                subprocess.run([ctl, "stop", str(target.pid)], env=env, check=True,
                               capture_output=True, timeout=120)
                ctl_close.append((time.perf_counter() - t0) * 1e3)
        out.update({
            "open_ms": {"first": opens[0], "p50": pct(opens[1:] or opens, 0.5),
                        "p90": pct(opens[1:] or opens, 0.9), "max": max(opens)},
            "close_ms": {"first": closes[0], "p50": pct(closes[1:] or closes, 0.5),
                         "p90": pct(closes[1:] or closes, 0.9), "max": max(closes)},
            "ctl_open_ms_p50": pct(ctl_open, 0.5), "ctl_close_ms_p50": pct(ctl_close, 0.5),
            "files_missing_at_reply": missing,
            "memory": {k: {"rss_kb": v[0], "fds": v[1]} for k, v in memory.items()},
            "open_ms_all": opens, "close_ms_all": closes,
        })
    finally:
        stop.write_text("")
        try:
            target.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            target.kill()
            target.communicate()
    out["target_exit"] = target.returncode
    return out


def fmt(v, digits=1):
    return "–" if v is None else f"{v:,.{digits}f}"


def markdown(info, cfg, launches, windows):
    lines = [f"# Always on: idle cost and window latency ({info.get('gpu') or 'CPU only'})", "",
             f"{info['date']}, host {info['host']}, commit {info['commit']}, "
             f"{json.dumps(info['versions'])}", ""]
    dev = "GPU" if not cfg["cpu"] else "CPU (no GPU: CPU tensor adds)"
    lines += [f"## Tiny launches on the {dev}: {cfg['launches']:,} per region, "
              f"{cfg['regions']} regions per run, {cfg['rounds']} runs per variant", ""]
    rows = []
    for v in VARIANTS:
        s = launches[v]
        ok = [g["ns_per_launch"] for g in s["runs"] if "ns_per_launch" in g]
        errors = [g["error"][:80] for g in s["runs"] if "error" in g]
        rows.append([v, fmt(s["ns_per_launch"]), fmt(s["vs_none"], 3),
                     ", ".join(f"{x:.0f}" for x in ok) or "–",
                     s["skipped"] or ("; ".join(errors) if errors else "")])
    lines += result_files.table(["variant", "ns/launch", "× none", "runs (ns/launch)", "note"],
                                rows)
    lines += ["", "`idle`: under `proton --idle`, no window; `window`: a window open (recording). "
              "A run is its regions' lower quartile; a variant, the median of its runs.", ""]
    if "error" in windows:
        lines += [f"## Windows: failed: {windows['error']}", ""]
        return "\n".join(lines) + "\n"
    lines += [f"## Windows: {windows['windows']} windows of {windows['window_ms']} ms, "
              "through the control socket", ""]
    rows = []
    for key, what in (("open_ms", "open: `start` sent → reply (session running)"),
                      ("close_ms", "close: `stop` sent → reply (file written)")):
        s = windows[key]
        rows.append([what, fmt(s["first"], 2), fmt(s["p50"], 2), fmt(s["p90"], 2),
                     fmt(s["max"], 2)])
    lines += result_files.table(["ms", "first window", "p50 (rest)", "p90 (rest)", "max"], rows)
    lines += ["", f"`proton-ctl start`/`stop` (process start included), median of 5: "
              f"{fmt(windows['ctl_open_ms_p50'], 2)} / {fmt(windows['ctl_close_ms_p50'], 2)} ms. "
              f"Files missing when the stop reply came: {windows['files_missing_at_reply']}.", ""]
    mem = windows["memory"]
    rows = [[k, fmt(v["rss_kb"] / 1024, 1), v["fds"]] for k, v in mem.items()]
    lines += result_files.table(["target process", "RSS MB", "open fds"], rows)
    keys = list(mem)
    if len(keys) >= 3:
        a, b = mem[keys[1]], mem[keys[-1]]
        lines += ["", f"From window 1 to window {windows['windows']}: RSS "
                  f"{(b['rss_kb'] - a['rss_kb']) / 1024:+.1f} MB, fds {b['fds'] - a['fds']:+d}."]
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=str(result_files.DEFAULT_DIR))
    p.add_argument("--rounds", type=int, default=None, help="runs per variant (default 3, 1 on "
                   "the CPU or with --quick)")
    p.add_argument("--windows", type=int, default=50)
    p.add_argument("--launches", type=int, default=None, help="launches per timed region "
                   "(default 5000, 2000 on the CPU)")
    p.add_argument("--regions", type=int, default=7)
    p.add_argument("--quick", action="store_true", help="1 round, 3 regions, 20 windows")
    p.add_argument("--cpu", action="store_true", help="the CPU part only, even with a GPU")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--target", default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        return child_launches(json.loads(a.child))
    if a.target:
        return child_target(json.loads(a.target))
    import torch

    cpu = a.cpu or not torch.cuda.is_available()
    rounds = a.rounds or (1 if cpu or a.quick else 3)
    cfg = {"cpu": cpu, "launches": a.launches or (2000 if cpu else 5000),
           "regions": 3 if a.quick else a.regions, "warmup": 1 if a.quick else 2,
           "rounds": rounds}
    n_windows = 20 if a.quick and a.windows == 50 else a.windows
    info = machine.describe(gpu=not cpu)
    with tempfile.TemporaryDirectory(prefix="proton_always_on_") as tmp:
        work = pathlib.Path(tmp)
        print("tiny launches:", file=sys.stderr)
        launches = launches_part(cfg, rounds, work)
        print("windows:", file=sys.stderr)
        try:
            windows = windows_part(cfg, n_windows, work)
        except (RuntimeError, OSError, subprocess.SubprocessError) as e:
            windows = {"error": str(e)}
    data = {"machine": info, "config": dict(cfg, windows=n_windows), "launches": launches,
            "windows": windows}
    text = markdown(info, cfg, launches, windows)
    stem = result_files.stem(a.out, info.get("gpu") or "cpu", "always-on")
    result_files.write(stem, data, text)
    print(text)
    print(f"wrote {stem}.json and {stem}.md", file=sys.stderr)
    failed = "error" in windows or any(
        "error" in g for s in launches.values() for g in s["runs"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
