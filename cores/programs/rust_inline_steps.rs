// SPDX-License-Identifier: Apache-2.0
// The other file of cores/programs/rust_inline.rs: its functions are inlined into that file's,
// so their frames' file is this one.

#[inline(always)]
pub fn fx_rust_store(target: *mut u32, v: u32) {
    unsafe { std::ptr::write_volatile(target, v) };
}

#[inline(always)]
pub fn fx_rust_step(v: u32) {
    super::fx_rust_crash(v * 3);
    std::hint::spin_loop();
}
