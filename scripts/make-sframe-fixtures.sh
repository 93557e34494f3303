#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the real-toolchain SFrame fixtures under tests/fixtures/sframe/.
#
# Debian 12's binutils (2.40) only emits SFrame V1, so the fixtures are assembled by newer
# binutils taken from Debian itself: a debootstrap --variant=minbase chroot of trixie
# (binutils 2.44, SFrame V2) and one of sid (binutils 2.47.50.x, SFrame V3, plus the aarch64
# and s390x cross compilers). The chroots live outside the repository (never committed) in
# $SFRAME_CHROOTS (default /work/sframe-chroots/<suite>); they take a while to build, so CI
# does not have them and the tests only read the committed outputs.
#
# Usage: scripts/make-sframe-fixtures.sh [chroots|build|all]   (default: all)
# Idempotent: an existing chroot is reused (its packages are installed if missing), and the
# fixtures are rebuilt from tests/fixtures/sframe/src/ every time.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
chroots="${SFRAME_CHROOTS:-/work/sframe-chroots}"
mirror="${SFRAME_MIRROR:-http://deb.debian.org/debian}"
out="$repo/tests/fixtures/sframe"
what="${1:-all}"

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive LC_ALL=C

common_pkgs=(gcc binutils libc6-dev)
sid_cross_pkgs=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross gcc-s390x-linux-gnu libc6-dev-s390x-cross)

# ---- chroots ---------------------------------------------------------------------------------

ensure_debootstrap() {
  command -v debootstrap >/dev/null 2>&1 && return
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends debootstrap
}

# make_chroot SUITE PACKAGES...: minbase system, then the compilers through the chroot's apt.
make_chroot() {
  local suite="$1"
  shift
  local dir="$chroots/$suite"
  if [ ! -x "$dir/usr/bin/apt-get" ] || [ ! -f "$dir/.debootstrap-done" ]; then
    $SUDO mkdir -p "$dir"
    # The host keyring knows the trixie archive keys, which also sign sid's Release file.
    $SUDO debootstrap --variant=minbase "$suite" "$dir" "$mirror"
    $SUDO touch "$dir/.debootstrap-done"
  fi
  local missing=()
  for p in "$@"; do
    $SUDO chroot "$dir" dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$p")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    $SUDO chroot "$dir" apt-get -o Acquire::Check-Valid-Until=false update -qq
    $SUDO chroot "$dir" apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

do_chroots() {
  ensure_debootstrap
  make_chroot trixie "${common_pkgs[@]}"
  make_chroot sid "${common_pkgs[@]}" "${sid_cross_pkgs[@]}"
}

# ---- fixtures --------------------------------------------------------------------------------

# Flags every fixture shares: optimised, no frame pointer, SFrame from the assembler, no debug
# info (keeps the binaries small; .eh_frame and .symtab are all the tests need).
CFLAGS_COMMON=(-O2 -fomit-frame-pointer -Wa,--gsframe -fasynchronous-unwind-tables)

# in_chroot SUITE CMD...: run CMD inside the chroot with the fixture sources at /fx.
in_chroot() {
  local suite="$1"
  shift
  local dir="$chroots/$suite"
  $SUDO mkdir -p "$dir/fx"
  $SUDO rm -rf "$dir/fx/src" "$dir/fx/out"
  $SUDO cp -r "$out/src" "$dir/fx/src"
  $SUDO mkdir -p "$dir/fx/out"
  $SUDO chroot "$dir" "$@"
}

# build_set SUITE ARCH-DIR CC EXTRA-FLAGS...: compiles every generic program plus the
# architecture's own ones into tests/fixtures/sframe/ARCH-DIR/, and records objdump --sframe.
build_set() {
  local suite="$1" dest="$2" cc="$3"
  shift 3
  local extra=("$@")
  local objdump=objdump
  case "$cc" in
  *-linux-gnu-gcc) objdump="${cc%gcc}objdump" ;;
  esac
  local progs=(chain drap noreturn plt signal leaf)
  case "$dest" in
  *-aarch64) progs+=(pacret) ;;
  *-s390x) progs+=(backchain) ;;
  esac
  local script="set -e; cd /fx/src;"
  for p in "${progs[@]}"; do
    local flags=("${CFLAGS_COMMON[@]}" "${extra[@]}")
    case "$p" in
    pacret) flags+=(-mbranch-protection=pac-ret) ;;
    backchain) flags+=(-mbackchain) ;;
    esac
    # The assembler says which functions it leaves out of .sframe: keep that record.
    script+=" echo '== $p: $cc ${flags[*]}' >> /fx/out/compiler-messages.txt;"
    script+=" $cc ${flags[*]} -o /fx/out/$p $p.c 2>>/fx/out/compiler-messages.txt;"
    script+=" $objdump --sframe=.sframe /fx/out/$p > /fx/out/$p.objdump-sframe.txt;"
  done
  in_chroot "$suite" /bin/sh -c "$script"
  mkdir -p "$out/$dest"
  rm -f "$out/$dest"/*
  cp "$chroots/$suite/fx/out/"* "$out/$dest/"
  # objdump prints the file name it was given; make it the committed relative name.
  sed -i "s#/fx/out/#$dest/#g" "$out/$dest"/*.objdump-sframe.txt
  # The compiler's temporary assembly file names are random.
  sed -i -E "s#/tmp/cc[A-Za-z0-9]+\.s#<tmp>.s#g" "$out/$dest/compiler-messages.txt"
  # The chroot's readelf knows SHT_GNU_SFRAME; capture its output first (grep -q closing the
  # pipe early would fail the pipeline under pipefail).
  local sections segments
  for p in "${progs[@]}"; do
    sections="$($SUDO chroot "$chroots/$suite" readelf -SW "/fx/out/$p")"
    segments="$($SUDO chroot "$chroots/$suite" readelf -lW "/fx/out/$p")"
    if ! grep -q ' \.sframe ' <<<"$sections" || ! grep -q 'GNU_SFRAME' <<<"$segments"; then
      echo "no .sframe section or PT_GNU_SFRAME in $dest/$p" >&2
      exit 1
    fi
  done
}

record_versions() {
  {
    echo "# Exact Debian package versions in the chroots that built these fixtures"
    echo "# (dpkg-query -W), written by scripts/make-sframe-fixtures.sh."
    for suite in trixie sid; do
      echo "[$suite]"
      # Installed packages only: the toolchain proper (binutils*, gcc*, cpp*) and the C
      # libraries the programs were linked against.
      $SUDO chroot "$chroots/$suite" dpkg-query -W -f='${db:Status-Abbrev} ${Package}\t${Version}\n' \
        'binutils*' 'gcc*' 'cpp*' 'libc6' 'libc6-dev' 'libc6-dev-*-cross' 'libc6-*-cross' |
        awk '$1 == "ii" { print $2 "\t" $3 }' | sort -u
      echo "objdump: $($SUDO chroot "$chroots/$suite" objdump --version | head -1)"
    done
  } >"$out/VERSIONS"
}

do_build() {
  build_set trixie trixie-x86_64 gcc
  build_set sid sid-x86_64 gcc
  build_set sid sid-aarch64 aarch64-linux-gnu-gcc
  build_set sid sid-s390x s390x-linux-gnu-gcc
  record_versions
}

case "$what" in
chroots) do_chroots ;;
build) do_build ;;
all)
  do_chroots
  do_build
  ;;
*)
  echo "usage: $0 [chroots|build|all]" >&2
  exit 2
  ;;
esac
