#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every libFuzzer target of a build for SECONDS each over a scratch copy of its committed
# seed corpus (the committed corpus never grows), then replays tests/fuzz/regressions/<target>/.
# Crash reproducers go to BUILD_DIR/fuzz-artifacts/<target>/. Exits non-zero on any crash.
#
#   tests/fuzz/run-fuzzers.sh SECONDS BUILD_DIR [TARGET...]
set -u
if [ $# -lt 2 ]; then
  echo "usage: $0 SECONDS BUILD_DIR [TARGET...]" >&2
  exit 2
fi
seconds=$1
build=$(cd "$2" && pwd) || exit 2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -gt 0 ]; then
  targets=("$@")
else
  targets=()
  for src in "$here"/fuzz_*.cpp; do targets+=("$(basename "$src" .cpp)"); done
fi

artifacts=$build/fuzz-artifacts
work=$(mktemp -d /tmp/ehbt-fuzz-XXXXXX)
trap 'rm -rf "$work"' EXIT
failed=0
for t in "${targets[@]}"; do
  bin=$build/tests/fuzz/$t
  if [ ! -x "$bin" ]; then
    echo "$t: not built ($bin)" >&2
    failed=1
    continue
  fi
  mkdir -p "$artifacts/$t" "$work/$t"
  [ -d "$here/corpus/$t" ] && cp -r "$here/corpus/$t/." "$work/$t/"
  log=$artifacts/$t.log
  # Known crashers first: each must run clean now.
  if [ -d "$here/regressions/$t" ] && [ -n "$(ls -A "$here/regressions/$t")" ]; then
    if ! "$bin" -rss_limit_mb=2048 -timeout=10 "$here/regressions/$t"/* >"$artifacts/$t.regressions.log" 2>&1; then
      echo "$t: a regression input still fails (see $artifacts/$t.regressions.log)"
      failed=1
    fi
  fi
  "$bin" "$work/$t" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
    -artifact_prefix="$artifacts/$t/" -print_final_stats=1 >"$log" 2>&1
  rc=$?
  # The final stats line is "stat::number_of_executed_units: N"; "#N DONE" is the fallback.
  execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -1)
  [ -z "$execs" ] && execs=$(sed -n 's/^#\([0-9]*\)[[:space:]]*DONE.*/\1/p' "$log" | tail -1)
  if [ $rc -ne 0 ]; then
    echo "$t: CRASH (exit $rc) after ${execs:-?} executions; log $log, reproducers in $artifacts/$t/"
    grep -m1 -E "^==[0-9]+==ERROR|^SUMMARY|runtime error|ALARM|out-of-memory" "$log" | sed 's/^/  /'
    failed=1
  else
    echo "$t: ${execs:-?} executions in ${seconds}s, no crash"
  fi
done
exit $failed
