// SPDX-License-Identifier: Apache-2.0
// Built with `-C panic=abort` and stripped: the panic runs through std's precompiled panic
// machinery into panic_abort, whose CFI lives only in .debug_frame (gone after strip), then
// libc's abort. The fixture functions are #[inline(never)] so each is a real frame.
// Debian's rustc 1.63 has no stable std::hint::black_box: a volatile read hides values instead.
fn black_box(v: u32) -> u32 {
    let cell = v;
    unsafe { std::ptr::read_volatile(&cell) }
}

#[inline(never)]
fn fx_rust_level3(v: u32) -> u32 {
    if black_box(v) > 2 {
        panic!("fx_rust_level3 gives up at {}", v);
    }
    v
}

#[inline(never)]
fn fx_rust_level2(v: u32) -> u32 {
    black_box(fx_rust_level3(black_box(v + 1))) + 1
}

#[inline(never)]
fn fx_rust_level1(v: u32) -> u32 {
    black_box(fx_rust_level2(black_box(v + 1))) + 1
}

fn main() {
    let r = fx_rust_level1(black_box(1));
    println!("{}", r);
}
