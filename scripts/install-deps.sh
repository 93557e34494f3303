#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs every Debian package ehbt needs to build, test and benchmark.
# Idempotent: packages already present are left alone; apt-get update runs once.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config clang clang-format libclang-rt-14-dev
  libelf-dev libgtest-dev libgmock-dev libbenchmark-dev
  pybind11-dev python3-dev python3-pytest
  gdb gdb-multiarch elfutils binutils file
  qemu-user gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross
  gcc-s390x-linux-gnu g++-s390x-linux-gnu libc6-dev-s390x-cross
  gcc-i686-linux-gnu libc6-dev-i386-cross
  binutils-aarch64-linux-gnu binutils-s390x-linux-gnu
  sqlite3 python3-venv
  man-db groff-base
  chromium time libc6-dbg
  lldb-16 python3-lldb-16
  python3-distributed python3-dask python3-psycopg postgresql util-linux
  libzstd-dev liblzma-dev liblz4-dev zlib1g-dev libdeflate-dev libssl-dev zstd xz-utils lz4 gzip
  libdebuginfod-dev debuginfod libdw-dev dwz python3.11-dbg
  golang-go musl-tools rustc nodejs openjdk-17-jre-headless
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
