#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Folds what a long campaign (campaign.sh) learned back into the committed seed corpora: for
# every target, or the ones named, the inputs of CAMPAIGN_DIR/<target>/corpus that reach code
# the seeds do not are added to tests/fuzz/corpus/<target>/, chosen by libFuzzer's set-cover
# merge over edge coverage alone (-use_counters=0). Hit counts would keep ~10x as many inputs
# for the same edges; the seeds exist so that CI's fixed-seed runs and the ctest replays start
# from that code, not to reproduce a campaign's every path. Existing seeds are never removed.
#
#   tests/fuzz/merge-corpus.sh BUILD_DIR [TARGET...]
#
# BUILD_DIR is a fuzz build (see campaign.sh). Review the new files' total size before
# committing them (`git status tests/fuzz/corpus`).
set -u
. "$(dirname "$0")/targets.sh"
fuzz_build_and_targets "$0 BUILD_DIR [TARGET...]" "$@"
campaign=$(cd "${CAMPAIGN_DIR:-fuzz-campaign}" && pwd) || exit 2

status=0
for t in "${targets[@]}"; do
  bin=$build/tests/fuzz/$t
  [ -x "$bin" ] || { echo "$t: not built ($bin)" >&2; exit 2; }
  [ -d "$campaign/$t/corpus" ] || { echo "$t: no campaign corpus in $campaign/$t" >&2; continue; }
  seeds=$here/corpus/$t
  mkdir -p "$seeds"
  before=$(find "$seeds" -type f | wc -l)
  if ! "$bin" -set_cover_merge=1 -use_counters=0 "${fuzz_caps[@]}" "$seeds" \
    "$campaign/$t/corpus" >"$campaign/$t/merge.log" 2>&1; then
    echo "$t: merge failed (log: $campaign/$t/merge.log)" >&2
    status=1
    continue
  fi
  after=$(find "$seeds" -type f | wc -l)
  echo "$t: $((after - before)) new seeds, $after in all ($(du -sh --apparent-size "$seeds" | cut -f1))"
done
exit $status
