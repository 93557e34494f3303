// SPDX-License-Identifier: Apache-2.0
// process.abort() right after V8 deoptimises: the loop makes TurboFan compile fx_js_level1
// with fx_js_level2 and fx_js_level3 inlined, assuming n >= 0; the call with -5 leaves that
// code (a deopt), and the deoptimiser rebuilds the three as interpreter frames whose return
// addresses it sets to the start of Builtins_InterpreterEnterAtNextBytecode: return
// addresses no call instruction precedes, in the middle of a frame-pointer chain.
function fx_js_level3(n) { if (n < 0) process.abort(); return n + 1; }
function fx_js_level2(n) { return fx_js_level3(n) * 2; }
function fx_js_level1(n) { return fx_js_level2(n) + 1; }
let s = 0;
for (let i = 0; i < 2000000; i++) s += fx_js_level1(i);
fx_js_level1(-5);
