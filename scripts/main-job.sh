#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: dependencies, build, install into build/install, generate the sample cores
# (cores/make-cores.sh; on x86-64 it also has LLDB write minidumps of some of the programs,
# cores/make_minidumps.py), and triage them all, cores and minidumps, into buckets with
# ehbt-triage.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
build="${EHBT_BUILD:-build}"
cmake --install "$build" --prefix "$build/install" > /dev/null
bash cores/make-cores.sh "${EHBT_MAIN_ARCH:-x86_64}"
# A fresh store each run, so the table shows every sample core's bucket.
rm -f "$build/main-job.sqlite" "$build/main-job.sqlite-wal" "$build/main-job.sqlite-shm"
status=0
"$build/install/bin/ehbt-triage" --db "$build/main-job.sqlite" \
  --html "$build/triage-report.html" --jsonl "$build/triage.jsonl" \
  "cores/out/${EHBT_MAIN_ARCH:-x86_64}" || status=$?
echo "report: $build/triage-report.html  store: $build/main-job.sqlite"
# Exit 1 means some inputs could not be read or named modules were missing (both listed
# above, with the option that would help); that is a result, not a failure of the job.
[ "$status" -le 1 ]
