// SPDX-License-Identifier: Apache-2.0
// process.abort() from nested JS functions: the frames between node's C++ and the abort run
// in V8's generated code (anonymous executable memory), named only by node's perf map.
function fx_js_level3() { process.abort(); }
function fx_js_level2() { fx_js_level3(); }
function fx_js_level1() { fx_js_level2(); }
fx_js_level1();
