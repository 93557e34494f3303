#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ehbt-triage vs. eu-stack on batches of many-thread CPython cores: all numbers in one run.
#
#   bench/triage_vs_eustack.sh [BUILD_DIR] [N_CORES] [THREADS] [LARGE_N] [REPEATS]
#
# Makes LARGE_N (default 80) cores of /usr/bin/python3 with THREADS (default 16) threads
# blocked in a wait and the main thread in os.abort(); the small batch is the first N_CORES
# (default 20) of them (hard links, same files). On each batch, REPEATS (default 3) rounds of,
# interleaved so that a change in the machine's load hits every tool alike:
#   ehbt-triage -j1 and -j2 (in-process engine, fresh database each time),
#   eu-stack --core CORE --executable /usr/bin/python3.11 on each core in turn, one process
#   per core (its start-up is part of its cost, as it is for a user running it in a loop);
# plus one run of ehbt-triage -j1 with EHBT_TRIAGE_ENGINE=cli (one `ehbt core` per core).
# Fairness: eu-stack gets the same core files and the executable (-e), and unwinds every
# thread, as ehbt-triage does (which also hashes each core, signs it and stores every thread's
# frames in SQLite). Both read the same warm page cache.
#
# Printed per batch and tool: median wall seconds, cores/s, ratio to eu-stack's median wall,
# user+sys CPU seconds (median; less sensitive to other load on the machine than wall time)
# and that ratio, peak RSS of the largest single process (GNU time "Maximum resident set
# size": for ehbt-triage the largest of the parent and its workers, for eu-stack the largest
# eu-stack process), and ehbt-triage's own "Peak worker RSS" line.
# Needs: elfutils (eu-stack), time (/usr/bin/time), core_pattern writing `core` files into
# the working directory (else GDB's gcore is used, which is slower to make the cores).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-$here/build}" && pwd)"
small="${2:-20}"
threads="${3:-16}"
large="${4:-80}"
repeats="${5:-3}"
((large >= small)) || large=$small
py=/usr/bin/python3
pyexe="$(readlink -f "$py")"
work="$(mktemp -d /tmp/ehbt-triage-bench.XXXXXX)"
trap 'rm -rf "$work"' EXIT
export PYTHONPATH="$build/engine/python"
export EHBT_BIN="$build/engine/tools/ehbt"
triage="$here/triage/ehbt-triage"
# Byte-compiled once, as an installed package is: with PYTHONDONTWRITEBYTECODE set (as it is in
# some environments) every run would compile the package's modules from source again.
"$py" -m compileall -q "$here/triage/ehbt_triage" "$build/engine/python/ehbt" >/dev/null || true

prog="import os, threading, time
ev = threading.Event()
ts = [threading.Thread(target=ev.wait) for _ in range($threads)]
for t in ts: t.start()
time.sleep(0.3)
os.abort()"
pattern="$(cat /proc/sys/kernel/core_pattern)"
mkdir -p "$work/large" "$work/small"
echo "making $large cores of $pyexe with $threads+1 threads in $work/large ..."
for i in $(seq 1 "$large"); do
  d="$work/run$i"
  mkdir -p "$d"
  if [[ "$pattern" == core* && "$pattern" != */* ]]; then
    { (cd "$d" && ulimit -c unlimited && "$py" -c "$prog" 2>/dev/null) || true; } 2>/dev/null
    mv "$d"/core* "$work/large/py$i.core"
  else
    gdb -batch -nx -ex 'set disable-randomization off' -ex run \
      -ex "gcore $work/large/py$i.core" -ex kill --args "$py" -c "$prog" >/dev/null 2>&1
  fi
  rmdir "$d" 2>/dev/null || true
  ((i <= small)) && ln "$work/large/py$i.core" "$work/small/py$i.core"
done
du -sh --apparent-size "$work/large" | sed 's/^/cores (apparent size): /'
du -sh "$work/large" | sed 's/^/cores (on disk):       /'

# time_it LABEL CMD... : wall seconds, user+sys CPU seconds, peak RSS (KiB) -> $secs $cpu $rss
time_it() {
  local label="$1"; shift
  local t0 t1
  t0=$(date +%s.%N)
  /usr/bin/time -f "%U %S %M" -o "$work/time.txt" "$@" >"$work/$label.out" 2>"$work/$label.err" \
    || true
  t1=$(date +%s.%N)
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
  read -r u s rss < <(tail -1 "$work/time.txt")
  cpu=$(awk -v a="$u" -v b="$s" 'BEGIN { print a + b }')
}

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

cat >"$work/eustack.sh" <<EOF
#!/usr/bin/env bash
for c in "\$1"/*.core; do
  eu-stack --core "\$c" --executable "$pyexe" >/dev/null 2>&1 || true
done
EOF
chmod +x "$work/eustack.sh"

declare -A S C R
for batch in small large; do
  n=$(find "$work/$batch" -name '*.core' | wc -l)
  echo "batch $batch: $n cores, $repeats rounds ..."
  for r in $(seq 1 "$repeats"); do
    for j in 1 2; do
      rm -f "$work/db"*
      time_it "$batch-triage-j$j" "$py" "$triage" -j "$j" --db "$work/db" "$work/$batch"
      S[$batch,j$j]+="$secs "; C[$batch,j$j]+="$cpu "; R[$batch,j$j]=$rss
      if ! grep -q "$n analysed, 0 seen before, 0 failed" "$work/$batch-triage-j$j.out"; then
        echo "ehbt-triage -j$j did not analyse every core:" >&2
        tail -5 "$work/$batch-triage-j$j.out" "$work/$batch-triage-j$j.err" >&2
        exit 1
      fi
      grep -h "core(s):\|Peak worker RSS" "$work/$batch-triage-j$j.out" | sed "s/^/  -j$j: /"
    done
    time_it "$batch-eustack" "$work/eustack.sh" "$work/$batch"
    S[$batch,eu]+="$secs "; C[$batch,eu]+="$cpu "; R[$batch,eu]=$rss
  done
  if [[ $batch == small ]]; then
    rm -f "$work/db"*
    EHBT_TRIAGE_ENGINE=cli time_it "$batch-triage-cli" "$py" "$triage" -j 1 --db "$work/db" \
      "$work/$batch"
    S[$batch,cli]="$secs"; C[$batch,cli]="$cpu"; R[$batch,cli]=$rss
  fi
done

echo
printf "%-6s %-32s %8s %8s %8s %8s %8s %9s\n" "batch" "tool" "wall s" "cores/s" "vs eu" \
  "CPU s" "CPU vs" "RSS MiB"
for batch in small large; do
  n=$(find "$work/$batch" -name '*.core' | wc -l)
  eu_s=$(echo "${S[$batch,eu]}" | median)
  eu_c=$(echo "${C[$batch,eu]}" | median)
  for k in j1 j2 cli eu; do
    [[ -n "${S[$batch,$k]:-}" ]] || continue
    s=$(echo "${S[$batch,$k]}" | median)
    c=$(echo "${C[$batch,$k]}" | median)
    case $k in
      j1) name="ehbt-triage -j1 (in-process)";;
      j2) name="ehbt-triage -j2 (in-process)";;
      cli) name="ehbt-triage -j1 (CLI per core)";;
      eu) name="eu-stack, one core at a time";;
    esac
    awk -v b="$batch($n)" -v name="$name" -v n="$n" -v s="$s" -v c="$c" -v es="$eu_s" \
      -v ec="$eu_c" -v rss="${R[$batch,$k]}" 'BEGIN {
        printf "%-6s %-32s %8.2f %8.1f %7.2fx %8.2f %7.2fx %9.1f\n", b, name, s, n / s, es / s,
          c, ec / c, rss / 1024 }'
  done
done
echo "(wall and CPU: medians of $repeats rounds, except the CLI row: one run;" \
  "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg))"
