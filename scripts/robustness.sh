#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The robustness half of the test suite: the whole unit suite again under ASan+UBSan (gcc)
# (which includes every fuzz target replaying its seeds and regression inputs), then every
# libFuzzer target (clang) for a fixed number of executions with a fixed seed
# (tests/fuzz/run-fuzzers.sh: the same verdict on every run). Build dirs: build-asan/,
# build-fuzz/.
set -euo pipefail
cd "$(dirname "$0")/.."

cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEHBT_SANITIZE=ON -DEHBT_PYTHON=OFF \
  -DEHBT_BENCH=OFF > /dev/null
cmake --build build-asan -j"$(nproc)"
# Integration tests need the fixture cores and tools of the main build; the unit suite is what
# the sanitizers add most to (every parser and the walk on real cores).
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan -L unit --output-on-failure -j"$(nproc)"

CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DEHBT_FUZZ=ON -DEHBT_TESTS=OFF -DEHBT_BENCH=OFF -DEHBT_PYTHON=OFF > /dev/null
cmake --build build-fuzz -j"$(nproc)"
bash tests/fuzz/run-fuzzers.sh build-fuzz
