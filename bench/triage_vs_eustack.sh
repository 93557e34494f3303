#!/usr/bin/env bash
# ehbt-triage vs. eu-stack on a batch of many-thread CPython cores.
#
#   bench/triage_vs_eustack.sh [BUILD_DIR] [N_CORES] [THREADS]
#
# Makes N_CORES (default 12) cores of /usr/bin/python3 with THREADS (default 16) threads
# blocked in a wait and the main thread in os.abort(), then times, on the same cores:
#   ehbt-triage -j1 and -j2 (in-process engine, fresh database each time),
#   ehbt-triage -j1 with EHBT_TRIAGE_ENGINE=cli (one `ehbt core` process per core),
#   eu-stack --core CORE --executable /usr/bin/python3.11, one core after the other.
# and prints cores/s, the ratios and the peak RSS (GNU time -v "Maximum resident set size",
# which for ehbt-triage is the largest of the parent and its workers).
# Needs: elfutils (eu-stack), time (/usr/bin/time), core_pattern writing `core` files into
# the working directory (else GDB's gcore is used, which is slower to make the cores).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-$here/build}" && pwd)"
n="${2:-12}"
threads="${3:-16}"
py=/usr/bin/python3
pyexe="$(readlink -f "$py")"
work="$(mktemp -d /tmp/ehbt-triage-bench.XXXXXX)"
trap 'rm -rf "$work"' EXIT
export PYTHONPATH="$build/engine/python"
export EHBT_BIN="$build/engine/tools/ehbt"
triage="$here/triage/ehbt-triage"

mkdir -p "$work/cores"
prog="import os, threading, time
ev = threading.Event()
ts = [threading.Thread(target=ev.wait) for _ in range($threads)]
for t in ts: t.start()
time.sleep(0.3)
os.abort()"
pattern="$(cat /proc/sys/kernel/core_pattern)"
echo "making $n cores of $pyexe with $threads+1 threads in $work/cores ..."
for i in $(seq 1 "$n"); do
  d="$work/run$i"
  mkdir -p "$d"
  if [[ "$pattern" == core* && "$pattern" != */* ]]; then
    (cd "$d" && ulimit -c unlimited && "$py" -c "$prog" 2>/dev/null) || true
    mv "$d"/core* "$work/cores/py$i.core"
  else
    gdb -batch -nx -ex 'set disable-randomization off' -ex run -ex "gcore $work/cores/py$i.core" \
      -ex kill --args "$py" -c "$prog" >/dev/null 2>&1
  fi
done
du -sh --apparent-size "$work/cores" | sed 's/^/cores (apparent size): /'
du -sh "$work/cores" | sed 's/^/cores (on disk):       /'

# time_it LABEL CMD... : wall seconds and peak RSS (KiB) into $secs / $rss.
time_it() {
  local label="$1"; shift
  local t0 t1
  t0=$(date +%s.%N)
  /usr/bin/time -v -o "$work/time.txt" "$@" >"$work/$label.out" 2>"$work/$label.err" || true
  t1=$(date +%s.%N)
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
  rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/time.txt")
}

declare -A S R
for j in 1 2; do
  rm -f "$work/db$j"*
  time_it "triage-j$j" "$py" "$triage" -j "$j" --db "$work/db$j" "$work/cores"
  S[triage_j$j]=$secs; R[triage_j$j]=$rss
done
rm -f "$work/dbcli"*
EHBT_TRIAGE_ENGINE=cli time_it "triage-cli" "$py" "$triage" -j 1 --db "$work/dbcli" "$work/cores"
S[triage_cli]=$secs; R[triage_cli]=$rss
grep -h "^Engine:" "$work/triage-j1.out" "$work/triage-cli.out" || true
grep -h "core(s):\|Peak worker RSS" "$work/triage-j1.out" "$work/triage-j2.out" || true

cat >"$work/eustack.sh" <<EOF
#!/usr/bin/env bash
for c in "$work"/cores/*.core; do
  eu-stack --core "\$c" --executable "$pyexe" >/dev/null 2>&1 || true
done
EOF
chmod +x "$work/eustack.sh"
time_it eustack "$work/eustack.sh"
S[eustack]=$secs; R[eustack]=$rss

echo
printf "%-34s %9s %10s %14s %12s\n" "tool" "seconds" "cores/s" "vs eu-stack" "peak RSS MiB"
for k in triage_j1 triage_j2 triage_cli eustack; do
  cps=$(awk -v a="$n" -v b="${S[$k]}" 'BEGIN { print a / b }')
  ratio=$(awk -v a="${S[eustack]}" -v b="${S[$k]}" 'BEGIN { print a / b }')
  case $k in
    triage_j1) name="ehbt-triage -j1 (in-process)";;
    triage_j2) name="ehbt-triage -j2 (in-process)";;
    triage_cli) name="ehbt-triage -j1 (CLI per core)";;
    eustack) name="eu-stack, one core at a time";;
  esac
  printf "%-34s %9.2f %10.2f %13.2fx %12.1f\n" "$name" "${S[$k]}" "$cps" "$ratio" \
    "$(awk -v a="${R[$k]}" 'BEGIN { print a / 1024 }')"
done
echo "(machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg))"
