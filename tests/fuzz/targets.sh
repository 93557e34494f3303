# SPDX-License-Identifier: Apache-2.0
# Sourced by run-fuzzers.sh, campaign.sh and merge-corpus.sh: what they share about fuzz
# targets (each a tests/fuzz/fuzz_*.cpp), how they take their BUILD_DIR, and the caps every
# fuzzer run gets. Sets `here` to this directory.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# Caps every run shares: a single allocation over 256 MiB is a bug (the engine reads what it
# needs; Limits bound the rest), as is an input taking 10 s.
fuzz_caps=(-rss_limit_mb=2048 -malloc_limit_mb=256 -timeout=10)

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
    for src in "$here"/fuzz_*.cpp; do targets+=("$(basename "$src" .cpp)"); done
  fi
}

# fuzz_build_and_targets USAGE BUILD_DIR [TARGET...]: both of the above, for the scripts whose
# arguments are just those.
fuzz_build_and_targets() {
  fuzz_build_dir "$@"
  fuzz_targets "${@:3}"
}
