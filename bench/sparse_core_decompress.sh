#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Decompression speed and peak disk/RSS of `ehbt core` on a 1 GiB sparse core, per format.
# The core is real: a process maps 1 GiB, touches one page in 256 (4 MiB of data) and
# crashes; the kernel writes the untouched pages as holes. Each format is made with its own
# tool; `ehbt core` then decompresses it into its sparse temporary file. Peak disk is the
# temporary file's allocated blocks (polled through /proc/PID/fd while ehbt runs), peak RSS
# from /usr/bin/time. Usage: bench/sparse_core_decompress.sh [BUILD_DIR]
set -euo pipefail
build="$(cd "${1:-build}" && pwd)"
ehbt="$build/engine/tools/ehbt"
[ -x "$ehbt" ] || { echo "no $ehbt: build first" >&2; exit 2; }
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cat > "$dir/big.c" <<'C'
#include <string.h>
#include <sys/mman.h>
int main(void) {
  size_t n = 1ul << 30;
  char* p = mmap(0, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  for (size_t i = 0; i < n; i += 4096 * 256) memset(p + i, 0x5a, 4096);
  *(volatile int*)0 = 1;
  return 0;
}
C
gcc -O1 -o "$dir/big" "$dir/big.c"
(cd "$dir" && ulimit -c unlimited && { ./big || true; }) 2>/dev/null
core="$(ls "$dir"/core* 2>/dev/null | head -1)"
if [ -z "$core" ]; then
  # core_pattern pipes cores elsewhere: let gdb write it.
  gdb -nx -batch -ex run -ex "gcore $dir/core" "$dir/big" >/dev/null 2>&1
  core="$dir/core"
fi
printf 'core: %s bytes apparent, %s KiB allocated\n' "$(stat -c %s "$core")" "$(du -k "$core" | cut -f1)"
mkdir -p "$dir/tmp"
for fmt in zstd xz lz4 gzip; do
  case $fmt in
    zstd) zstd -q -c "$core" > "$dir/c.$fmt" ;;
    xz) xz -T1 -c "$core" > "$dir/c.$fmt" ;;
    lz4) lz4 -q -c "$core" > "$dir/c.$fmt" ;;
    gzip) gzip -c "$core" > "$dir/c.$fmt" ;;
  esac
  TMPDIR="$dir/tmp" /usr/bin/time -f '%e %M' -o "$dir/time" "$ehbt" core "$dir/c.$fmt" \
    > /dev/null 2>&1 &
  timer=$!
  peak=0
  while kill -0 "$timer" 2>/dev/null; do
    for pid in $(pgrep -P "$timer" 2>/dev/null); do
      for fd in /proc/"$pid"/fd/*; do
        case "$(readlink "$fd" 2>/dev/null)" in
          "$dir/tmp/"*)
            b=$(stat -L -c %b "$fd" 2>/dev/null || echo 0)
            [ "$((b * 512))" -gt "$peak" ] && peak=$((b * 512))
            ;;
        esac
      done
    done
    sleep 0.05
  done
  wait "$timer" || true
  read -r secs rss < <(tail -1 "$dir/time")
  mib=$(( $(stat -c %s "$core") / 1048576 ))
  printf '%-5s %8s bytes compressed  %6ss  %6.0f MiB/s  peak RSS %6s KiB  peak disk %6s KiB\n' \
    "$fmt" "$(stat -c %s "$dir/c.$fmt")" "$secs" "$(echo "$mib / ($secs + 0.001)" | bc -l)" \
    "$rss" "$((peak / 1024))"
done
