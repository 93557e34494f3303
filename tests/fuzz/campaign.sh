#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Long, randomized fuzzing for people and machines with time (not CI): every target, or the
# ones named, for SECONDS each (default 3600) with a random seed, growing a private corpus
# under CAMPAIGN_DIR (default ./fuzz-campaign) that persists between campaigns. Each crash is
# minimised and copied into tests/fuzz/regressions/<target>/ under a name from its content,
# ready to commit with the fix; CI replays that directory on every run.
#
#   tests/fuzz/campaign.sh BUILD_DIR [SECONDS] [TARGET...]
#
# BUILD_DIR is a fuzz build: CC=clang CXX=clang++ cmake -B build-fuzz -DEHBT_FUZZ=ON
# -DEHBT_TESTS=OFF -DEHBT_BENCH=OFF -DEHBT_PYTHON=OFF && cmake --build build-fuzz.
set -u
. "$(dirname "$0")/targets.sh"
fuzz_build_dir "$0 BUILD_DIR [SECONDS] [TARGET...]" "$@"
seconds=${2:-3600}
shift $(($# >= 2 ? 2 : 1))
fuzz_targets "$@"
campaign=$(mkdir -p "${CAMPAIGN_DIR:-fuzz-campaign}" && cd "${CAMPAIGN_DIR:-fuzz-campaign}" && pwd)
found=0
for t in "${targets[@]}"; do
  bin=$build/tests/fuzz/$t
  [ -x "$bin" ] || { echo "$t: not built ($bin)" >&2; exit 2; }
  corpus=$campaign/$t/corpus
  crashes=$campaign/$t/crashes
  mkdir -p "$corpus" "$crashes"
  seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
  echo "$t: ${seconds}s, seed $seed, corpus $corpus"
  "$bin" "$corpus" "$here/corpus/$t" -max_total_time="$seconds" -seed="$seed" \
    "${fuzz_caps[@]}" -artifact_prefix="$crashes/" \
    -print_final_stats=1 >"$campaign/$t/last.log" 2>&1
  for crash in "$crashes"/*; do
    [ -f "$crash" ] || continue
    min=$crash.min
    "$bin" -minimize_crash=1 -runs=20000 -exact_artifact_path="$min" "$crash" \
      >"$crash.minimize.log" 2>&1
    [ -s "$min" ] || cp "$crash" "$min"
    dest=$here/regressions/$t/crash-$(sha1sum "$min" | cut -c1-16)
    mkdir -p "$here/regressions/$t"
    cp "$min" "$dest"
    rm -f "$crash" "$min"
    echo "$t: new regression input $dest (log in $crash.minimize.log)"
    found=1
  done
done
exit $found
