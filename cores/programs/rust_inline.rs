// SPDX-License-Identifier: Apache-2.0
// Source lines and inlined frames in Rust (#28; cores/make_line_cores.py, case `inlinerust`):
// built with Debian's rustc, -C opt-level=2 -C debuginfo=2. The null write is three
// #[inline(always)] calls deep inside fx_rust_crash (fx_rust_middle -> fx_rust_deepest ->
// steps::fx_rust_store, the last one in another file), fx_rust_outer calls it through
// steps::fx_rust_step (inlined too), and main calls fx_rust_outer. GDB then shows seven
// frames of the program where the machine stack has three. Every line GDB names is fixed by
// these two files, so keep their layout when editing. Rust's runtime turns the SIGSEGV back
// to the default action and returns, so the store faults again and the core shows it.
#[path = "rust_inline_steps.rs"]
mod steps;

// Debian's rustc 1.63 has no stable std::hint::black_box: a volatile read hides values instead.
fn black_box(v: usize) -> usize {
    let cell = v;
    unsafe { std::ptr::read_volatile(&cell) }
}

#[inline(always)]
fn fx_rust_deepest(target: *mut u32, v: u32) {
    steps::fx_rust_store(target, v * 2);
}

#[inline(always)]
fn fx_rust_middle(target: *mut u32, v: u32) {
    fx_rust_deepest(target, v + 1);
    black_box(0);
}

#[inline(never)]
pub fn fx_rust_crash(v: u32) {
    let target = black_box(0) as *mut u32;
    fx_rust_middle(target, v + 1);
    black_box(0);
}

#[inline(never)]
pub fn fx_rust_outer(v: u32) {
    steps::fx_rust_step(v + 1);
    black_box(0);
}

fn main() {
    fx_rust_outer(black_box(1) as u32);
    black_box(0);
}
