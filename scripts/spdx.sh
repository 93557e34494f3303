#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Keeps the SPDX license identifier in every source file of the repository.
#
#   scripts/spdx.sh          add "SPDX-License-Identifier: Apache-2.0" where it is missing
#   scripts/spdx.sh --check  list the files without it; exit 1 if there are any
#
# Source files: C/C++ (// comment), Python, shell, CMake and bash completions (# comment),
# tracked or new (not ignored). The line goes first, or after a #! line. Left alone: the
# fixture sources under tests/fixtures/ (byte for byte what built the committed binaries)
# and data files (corpora, expectations, templates such as ehbt.pc.in). Idempotent: a file
# that names an SPDX identifier in its first five lines is never touched.
set -euo pipefail
cd "$(dirname "$0")/.."

readonly TAG="SPDX-License-Identifier: Apache-2.0"
check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "usage: scripts/spdx.sh [--check]" >&2; exit 2 ;;
esac

# Source files, NUL-separated: by name, plus extensionless files with a shell or Python #!.
sources() {
  git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
    case "$f" in
      tests/fixtures/*) ;;
      *.cpp | *.hpp | *.c | *.cc | *.h | *.py | *.py.in | *.sh | *.cmake | *.cmake.in) printf '%s\0' "$f" ;;
      CMakeLists.txt | */CMakeLists.txt | dist/bash-completion/*) printf '%s\0' "$f" ;;
      *)
        if [[ ${f##*/} != *.* && -f $f ]]; then
          read -r first < "$f" || true
          [[ $first =~ ^\#!.*(sh|bash|python3?)([[:space:]]|$) ]] && printf '%s\0' "$f"
        fi ;;
    esac
  done
}

# Those of them without an identifier in their first five lines, one per line (one awk for
# all files: this runs in ctest on every build).
mapfile -t missing < <(sources | xargs -0 -r awk '
  FNR == 1 { if (NR > 1 && !found) print prev; prev = FILENAME; found = 0 }
  /SPDX-License-Identifier:/ { found = 1 }
  FNR >= 5 { nextfile }
  END { if (NR > 0 && !found) print prev }')

if [ "$check" = 1 ]; then
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "spdx: ${#missing[@]} source files without \"$TAG\" (run scripts/spdx.sh):"
    printf '  %s\n' "${missing[@]}"
    exit 1
  fi
  echo "spdx: every source file carries \"$TAG\""
  exit 0
fi

for file in "${missing[@]}"; do
  case "$file" in
    *.cpp | *.hpp | *.c | *.cc | *.h) lead="//" ;;
    *) lead="#" ;;
  esac
  read -r first < "$file" || true
  if [[ $first == '#!'* ]]; then
    sed -i "1a $lead $TAG" "$file"
  else
    sed -i "1i $lead $TAG" "$file"
  fi
done
echo "spdx: added the identifier to ${#missing[@]} files"
