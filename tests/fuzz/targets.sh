# SPDX-License-Identifier: Apache-2.0
# Sourced by run-fuzzers.sh, campaign.sh and merge-corpus.sh: the one place that says what a
# fuzz target is (a tests/fuzz/fuzz_*.cpp, built into BUILD_DIR/tests/fuzz/) and how the
# scripts take their BUILD_DIR. Sets `fuzz_here` to this directory.
fuzz_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# fuzz_build_dir USAGE BUILD_DIR ...: sets `build` to BUILD_DIR made absolute; without one, or
# when it is not a directory, says so and exits 2.
fuzz_build_dir() {
  if [ $# -lt 2 ]; then
    echo "usage: $1" >&2
    exit 2
  fi
  build=$(cd "$2" && pwd) || exit 2
}

# fuzz_targets [TARGET...]: sets the array `targets` to the names given, else to every target.
fuzz_targets() {
  targets=("$@")
  if [ $# -eq 0 ]; then
    local src
    for src in "$fuzz_here"/fuzz_*.cpp; do targets+=("$(basename "$src" .cpp)"); done
  fi
}
