#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The CI half of fuzzing, deterministic: for every libFuzzer target of a build, replay the
# committed seed corpus and the kept regression inputs (tests/fuzz/regressions/<target>/, each
# must run clean), then fuzz for a fixed number of executions with a fixed seed over a scratch
# copy of the corpus (the committed corpus never grows). The same commit gives the same inputs
# and the same verdict on every run (address-space randomisation is turned off for them, see
# below); only wall time depends on the machine.
#
#   tests/fuzz/run-fuzzers.sh BUILD_DIR [TARGET...]
#
# EHBT_FUZZ_SEED (default 1) and EHBT_FUZZ_RUNS_PERCENT (default 100, scales every target's
# run count) change the campaign deliberately; long randomized campaigns are campaign.sh's job.
# Crash reproducers go to BUILD_DIR/fuzz-artifacts/<target>/. Exits non-zero on any crash.
set -u
. "$(dirname "$0")/targets.sh"
fuzz_build_and_targets "$0 BUILD_DIR [TARGET...]" "$@"
seed="${EHBT_FUZZ_SEED:-1}"
percent="${EHBT_FUZZ_RUNS_PERCENT:-100}"

# Executions per target: about 30 s each on the 2-core CI machine (measured rates: the core and
# ELF-image targets parse whole files, ~1k inputs/s; the others ~30k-250k inputs/s).
declare -A runs=(
  [fuzz_cfi]=1000000
  [fuzz_demangle]=1000000
  [fuzz_core]=25000
  [fuzz_eh_frame_hdr]=1000000
  [fuzz_elf_image]=25000
  [fuzz_minidump]=25000
  [fuzz_expression]=5000000
  # Not measured yet (no fuzz build was made with it): small inputs like fuzz_sframe's.
  [fuzz_go_lines]=1000000
  [fuzz_lines]=25000
  [fuzz_line_answers]=1000000
  [fuzz_sframe]=2000000
)
# Address-space randomisation changes the values the instrumented comparisons see (pointers),
# and with them libFuzzer's mutations: measured here, the same seed gave different coverage on
# two runs with it and identical runs without it. setarch -R turns it off for the fuzzers.
norandom=(setarch "$(uname -m)" -R)
if ! "${norandom[@]}" true 2>/dev/null; then
  echo "run-fuzzers: setarch -R is not permitted here; runs may differ between invocations" >&2
  norandom=()
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
  n=${runs[$t]:-}
  if [ -z "$n" ]; then
    echo "$t: no run count in $0" >&2
    failed=1
    continue
  fi
  n=$((n * percent / 100))
  mkdir -p "$artifacts/$t" "$work/$t"
  [ -d "$here/corpus/$t" ] && cp -r "$here/corpus/$t/." "$work/$t/"
  # Known inputs first, each once: the seeds and every kept regression input.
  replay=("$here/corpus/$t"/*)
  if [ -d "$here/regressions/$t" ] && [ -n "$(ls -A "$here/regressions/$t")" ]; then
    replay+=("$here/regressions/$t"/*)
  fi
  if ! "$bin" "${fuzz_caps[@]}" "${replay[@]}" >"$artifacts/$t.replay.log" 2>&1; then
    echo "$t: a seed or regression input fails (see $artifacts/$t.replay.log)"
    grep -m1 -E "^==[0-9]+==ERROR|^SUMMARY|runtime error|ALARM|out-of-memory|malloc\(" \
      "$artifacts/$t.replay.log" | sed 's/^/  /'
    failed=1
  fi
  log=$artifacts/$t.log
  start=$(date +%s)
  "${norandom[@]}" "$bin" "$work/$t" -runs="$n" -seed="$seed" -reload=0 "${fuzz_caps[@]}" \
    -artifact_prefix="$artifacts/$t/" -print_final_stats=1 >"$log" 2>&1
  rc=$?
  secs=$(($(date +%s) - start))
  execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -1)
  if [ $rc -ne 0 ]; then
    echo "$t: CRASH (exit $rc) after ${execs:-?} of $n executions (seed $seed); log $log," \
      "reproducers in $artifacts/$t/"
    grep -m1 -E "^==[0-9]+==ERROR|^SUMMARY|runtime error|ALARM|out-of-memory|malloc\(" "$log" |
      sed 's/^/  /'
    failed=1
  else
    echo "$t: ${execs:-?} executions (seed $seed) in ${secs}s, no crash"
  fi
done
exit $failed
