// SPDX-License-Identifier: Apache-2.0
// Rust's legacy mangling read as binutils' c++filt (2.40) reads it: every expected name below
// is c++filt's output for the symbol (names from the inlinerust fixture's Rust 1.63 std), not
// this demangler's. The malformed cases must fall back to the C++ demangler or the input.
#include <gtest/gtest.h>

#include "elf/rust_demangle.hpp"
#include "elf/symbol_table.hpp"

using ehbt::elf::demangle;
using ehbt::elf::demangle_rust_legacy;

TEST(RustDemangle, EscapesAreRead) {
  EXPECT_EQ(demangle("_ZN104_$LT$core..iter..sources..from_fn..FromFn$LT$F$GT$$u20$as$u20$core.."
                     "iter..traits..iterator..Iterator$GT$4next17h5029af7e7bac568fE"),
            "<core::iter::sources::from_fn::FromFn<F> as "
            "core::iter::traits::iterator::Iterator>::next::h5029af7e7bac568f");
  EXPECT_EQ(demangle("_ZN12panic_unwind8real_imp14find_eh_action28_$u7b$$u7b$closure$u7d$$u7d$"
                     "17h385b3ff300586ab7E"),
            "panic_unwind::real_imp::find_eh_action::{{closure}}::h385b3ff300586ab7");
  EXPECT_EQ(demangle("_ZN36_$LT$T$u20$as$u20$core..any..Any$GT$7type_id17h0976df0ec15ad1bfE"),
            "<T as core::any::Any>::type_id::h0976df0ec15ad1bf");
}

TEST(RustDemangle, SuffixesAfterTheNameAreLeftOut) {
  // ThinLTO's promoted locals, and a numbered copy of a static before it.
  EXPECT_EQ(demangle("_ZN12panic_unwind5dwarf2eh20read_encoded_pointer17h2a54419ccfa1d320E."
                     "llvm.16159844760554946847"),
            "panic_unwind::dwarf::eh::read_encoded_pointer::h2a54419ccfa1d320");
  EXPECT_EQ(demangle("_ZN3std10sys_common11thread_info11THREAD_INFO7__getit5STATE17h2df3b0740f4"
                     "82025E.0.llvm.14675764578384208085"),
            "std::sys_common::thread_info::THREAD_INFO::__getit::STATE::h2df3b0740f482025");
  EXPECT_EQ(demangle("_ZN3foo3bar17h05af221e174051e9E.cold"), "foo::bar::h05af221e174051e9");
  EXPECT_EQ(demangle("_ZN3foo17h05af221e174051e9E"), "foo::h05af221e174051e9");
}

TEST(RustDemangle, OnlyRustcsFormIsRust) {
  // No hash element: a C++ nested name, for the C++ demangler.
  EXPECT_FALSE(demangle_rust_legacy("_ZN3foo3barE"));
  EXPECT_EQ(demangle("_ZN3foo3barE"), "foo::bar");
  EXPECT_EQ(demangle("_ZN3foo3barEv"), "foo::bar()");
  // A hash of the wrong length or case, no 'E', a length past the end, an escape rustc does
  // not write (a letter, an unknown name, an unterminated one), a non-'.' suffix.
  for (const char* bad :
       {"_ZN3foo16h05af221e174051eE", "_ZN3foo17h05AF221E174051E9E", "_ZN3foo17h05af221e174051e9",
        "_ZN3foo99h05af221e174051e9E", "_ZN5a$u41$3foo17h05af221e174051e9E",
        "_ZN5a$XX$3foo17h05af221e174051e9E", "_ZN4a$LT3foo17h05af221e174051e9E",
        "_ZN3foo17h05af221e174051e9Ev", "_ZN17h05af221e174051e9E", "_ZN0_3foo17h05af221e174051e9E",
        "_ZN", "_ZNE", "_ZN3foo17h05af221e174051e9E$"}) {
    EXPECT_FALSE(demangle_rust_legacy(bad)) << bad;
  }
  // c++filt gives these back unchanged, as does demangle.
  EXPECT_EQ(demangle("_ZN5a$u41$b3b17h05af221e174051e9E"), "_ZN5a$u41$b3b17h05af221e174051e9E");
  EXPECT_EQ(demangle("_ZN3bar17h05af221e174051e9"), "_ZN3bar17h05af221e174051e9");
}

TEST(RustDemangle, HugeLengthsDoNotOverflow) {
  EXPECT_FALSE(demangle_rust_legacy("_ZN99999999999999999999999999a17h05af221e174051e9E"));
  EXPECT_FALSE(demangle_rust_legacy("_ZN18446744073709551617a17h05af221e174051e9E"));
}
