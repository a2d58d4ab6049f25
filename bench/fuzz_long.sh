#!/usr/bin/env bash
# Long fuzz runs of every decoder of outside bytes, with the libFuzzer + ASan + UBSan build of
# scripts/test (build/fuzz), each fuzzer seeded with its corpus under tests/fixtures/fuzz/.
# Writes a markdown summary (executions, coverage, features, corpus, crashes) per fuzzer.
#
#   bench/fuzz_long.sh [-m MINUTES] [-j PARALLEL] [-o SUMMARY.md] [--save-corpus] [FUZZER...]
#
#   -m  minutes per fuzzer (default 60)        -j  fuzzers side by side (default 2)
#   -o  summary file (default bench/results/<date>-fuzz-<minutes>min.md)
#   --save-corpus  merge what each run found, coverage-minimised, into its seed directory
#
# Crashes are kept as build/fuzz/long/<fuzzer>/crash-* (reproduce: build/fuzz/.../<fuzzer> FILE).
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=60 parallel=2 summary="" save=0 fuzzers=()
while (($#)); do
  case "$1" in
    -m) minutes=$2; shift 2 ;;
    -j) parallel=$2; shift 2 ;;
    -o) summary=$2; shift 2 ;;
    --save-corpus) save=1; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) fuzzers+=("$1"); shift ;;
  esac
done
((${#fuzzers[@]})) || fuzzers=(proton_viewer_reader_fuzzer proton_viewer_rank_fuzzer
  proton_viewer_msgpack_fuzzer proton_scratch_decoder_fuzzer proton_pc_records_fuzzer
  proton_mode_grammar_fuzzer proton_counter_split_fuzzer)
summary=${summary:-bench/results/$(date -u +%Y-%m-%d)-fuzz-${minutes}min.md}

if [[ ! -f build/fuzz/build.ninja ]]; then
  CXX=clang++ cmake -S . -B build/fuzz -G Ninja -DPROTON_BUILD_FUZZERS=ON -DCMAKE_UNITY_BUILD=ON \
    -DPROTON_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" >/dev/null
fi
ninja -C build/fuzz "${fuzzers[@]}"

run_one() {  # fuzzer: runs it, leaves build/fuzz/long/NAME/{log,rc}
  local f=$1 dir=build/fuzz/long/$1 bin extra=()
  bin=$(find build/fuzz -name "$f" -type f -perm -u+x | head -n 1)
  rm -rf "$dir"; mkdir -p "$dir/corpus"
  [[ $f == proton_viewer_reader_fuzzer ]] && extra=(-dict=tests/fixtures/viewer/fuzz_hatchet.dict)
  local seeds=(); [[ -d tests/fixtures/fuzz/$f ]] && seeds=("tests/fixtures/fuzz/$f")
  local rc=0
  # -fork keeps going after a crash (each is saved), so one run reports all it finds.
  UBSAN_OPTIONS=print_stacktrace=1 nice -n 10 "$bin" -max_len=8192 "${extra[@]}" \
    -max_total_time=$((minutes * 60)) -fork=1 -ignore_crashes=1 -ignore_ooms=1 \
    -ignore_timeouts=1 -artifact_prefix="$dir/" -print_final_stats=1 \
    "$dir/corpus" "${seeds[@]}" >"$dir/log" 2>&1 || rc=$?
  echo "$rc" >"$dir/rc"
  if ((save)); then
    mkdir -p "tests/fixtures/fuzz/$f"
    "$bin" -merge=1 -max_len=8192 "tests/fixtures/fuzz/$f" "$dir/corpus" >"$dir/merge.log" 2>&1 ||
      true
  fi
}

running=0
for f in "${fuzzers[@]}"; do
  run_one "$f" &
  if ((++running >= parallel)); then wait -n || true; ((running--)); fi
done
wait || true

{
  echo "# Fuzz runs: ${minutes} min per decoder ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $parallel side by side)"
  echo
  echo "libFuzzer + ASan + UBSan (-fno-sanitize-recover=undefined), seeds from tests/fixtures/fuzz/."
  echo
  echo "| fuzzer | executions | exec/s | coverage (cov) | features (ft) | corpus | crashes |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
  for f in "${fuzzers[@]}"; do
    log=build/fuzz/long/$f/log
    # The fork driver's last status line: "#N: cov: C ft: F corp: K exec/s R ...".
    line=$(grep -E '^#[0-9]+: cov' "$log" | tail -n 1 || true)
    execs=$(sed -nE 's/^#([0-9]+).*/\1/p' <<<"$line")
    cov=$(sed -nE 's/.*cov: ([0-9]+).*/\1/p' <<<"$line")
    ft=$(sed -nE 's/.*ft: ([0-9]+).*/\1/p' <<<"$line")
    corp=$(sed -nE 's/.*corp: ([0-9]+).*/\1/p' <<<"$line")
    rate=$(sed -nE 's/.*exec\/s:? ([0-9]+).*/\1/p' <<<"$line")  # the fork driver has no ':'
    crashes=$(find "build/fuzz/long/$f" -maxdepth 1 -name 'crash-*' | wc -l)
    echo "| $f | ${execs:-?} | ${rate:-?} | ${cov:-?} | ${ft:-?} | ${corp:-?} | $crashes |"
  done
  echo
  for f in "${fuzzers[@]}"; do
    for c in $(find "build/fuzz/long/$f" -maxdepth 1 -name 'crash-*' | head -n 5); do
      echo "- $f: \`$c\`"
    done
  done
} >"$summary"
cat "$summary"
