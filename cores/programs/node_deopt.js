// SPDX-License-Identifier: Apache-2.0
// process.abort() right after V8 deoptimises (run with --allow-natives-syntax): fx_js_level1 is
// compiled by TurboFan, synchronously, with fx_js_level2 and fx_js_level3 inlined and no
// feedback for the branch that aborts; the call with -5 takes it and leaves that code (a
// deopt), and the deoptimiser rebuilds the three as interpreter frames whose return addresses
// it sets to the start of Builtins_InterpreterEnterAtNextBytecode: return addresses no call
// instruction precedes, in the middle of a frame-pointer chain.
//
// Not left to V8's own tiering: its compiler runs on a thread of its own, and on a loaded
// machine its code was once not ready before the last call (no deopt, no fixture).
function fx_js_level3(n) { if (n < 0) process.abort(); return n + 1; }
function fx_js_level2(n) { return fx_js_level3(n) * 2; }
function fx_js_level1(n) { return fx_js_level2(n) + 1; }
%PrepareFunctionForOptimization(fx_js_level1);
let s = 0;
for (let i = 0; i < 100; i++) s += fx_js_level1(i);
%OptimizeFunctionOnNextCall(fx_js_level1);
s += fx_js_level1(1);
fx_js_level1(-5);
