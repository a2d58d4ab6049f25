#!/usr/bin/env bash
# Launch-path cost of two builds of Proton on one GPU in one run: the installed package ("new")
# and another source tree ("old", e.g. `git archive <commit> | tar -x -C .old`), built into a
# folder of its own and put first on PYTHONPATH for its turns. Turns alternate old, new, old,
# new..., each a `bench/run.py` pass over the launch-bound workloads with no profiler and the
# CUPTI floor beside, so every turn carries its own baseline and slow drifts hit both builds.
#
#   [ROUNDS=2] [LOOPS=8] bench/compare_builds.sh OLD_TREE [OUT_DIR] [TURNS]
#
# Writes OUT_DIR/compare-<old|new>-<k>.md (each pass's table) and OUT_DIR/compare_builds.md
# (proton's ratio to no profiler per workload and turn, both builds side by side).
set -euo pipefail
old_tree=${1:?usage: bench/compare_builds.sh OLD_TREE [OUT_DIR] [TURNS]}
out=${2:-./compare-out}
turns=${3:-2}
rounds=${ROUNDS:-2}
loops=${LOOPS:-8}
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
old_site="$(mktemp -d /tmp/proton-old-XXXXXX)"
echo "building $old_tree into $old_site"
python3 -m pip install -q --no-build-isolation --no-deps --target "$old_site" "$old_tree" \
  >"$out/compare-old-build.log" 2>&1 || { tail -n 30 "$out/compare-old-build.log"; exit 1; }

pass() {  # build label, turn
  local dir
  dir="$(mktemp -d /tmp/proton-pass-XXXXXX)"
  if [[ $1 == old ]]; then
    PYTHONPATH="$old_site${PYTHONPATH:+:$PYTHONPATH}" python3 "$here/run.py" --out "$dir" \
      --workloads tiny_torch,tiny_triton --variants none,floor,proton --rounds "$rounds" --loops "$loops" >/dev/null
  else
    python3 "$here/run.py" --out "$dir" --workloads tiny_torch,tiny_triton \
      --variants none,floor,proton --rounds "$rounds" --loops "$loops" >/dev/null
  fi
  cp "$dir"/*.md "$out/compare-$1-$2.md"
  python3 - "$dir"/*.json "$1" "$2" >>"$out/compare_builds.rows" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
label, turn = sys.argv[2], sys.argv[3]
by = {}
for r in doc["results"]:  # one per (round, workload, variant): the median of its regions
    if r.get("median_ms") is not None:
        by.setdefault((r["workload"], r["variant"]), []).append(r["median_ms"])
for w in ("tiny_torch", "tiny_triton"):
    med = {}
    for v in ("none", "floor", "proton"):
        xs = sorted(by.get((w, v), []))
        med[v] = xs[len(xs) // 2] if xs else None
    if med["none"] and med["proton"]:
        floor = f"{med['floor'] / med['none']:.3f}x" if med["floor"] else "-"
        print(f"| {w} | {label} | {turn} | {med['proton'] / med['none']:.3f}x | {floor} |")
EOF
}

rm -f "$out/compare_builds.rows"
for ((k = 1; k <= turns; k++)); do
  pass old "$k"
  pass new "$k"
done
{
  echo "# Launch path: two builds, turns alternating on one GPU"
  echo
  echo "GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1); old tree: $old_tree"
  echo
  echo "| workload | build | turn | proton / no profiler | CUPTI floor / no profiler |"
  echo "|---|---|---|---|---|"
  sort "$out/compare_builds.rows"
} >"$out/compare_builds.md"
cat "$out/compare_builds.md"
