// SPDX-License-Identifier: Apache-2.0
// A node process parked in nested JS functions: fx_wait3 writes the file named by its first
// argument, then blocks in Atomics.wait (a futex wait no one wakes), so a debugger and
// `ehbt pid` find it at the same place, three JS frames (V8's generated code, named only by
// the perf map of --perf-basic-prof) below node's C++.
const fs = require("fs");
function fx_wait3() {
  fs.writeFileSync(process.argv[2], "waiting\n");
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
}
function fx_wait2() { fx_wait3(); }
function fx_wait1() { fx_wait2(); }
fx_wait1();
