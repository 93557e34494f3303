// SPDX-License-Identifier: Apache-2.0
// Every loop in the engine is bounded by one of these caps. Defaults follow the Linux kernel's
// user unwinder and elfutils where they have one, with headroom for real compiler output.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ehbt {

// Capacity of a row's register-rule table; Limits::max_rules can only lower it.
inline constexpr std::size_t kRowCapacity = 48;

struct Limits {
  // Frames returned per thread (StopReason::MaxFrames beyond).
  uint32_t max_frames = 2048;
  // CFI instructions executed per row lookup (CIE initial + FDE instructions).
  uint32_t max_cfi_instructions = 20000;
  // DW_CFA_remember_state nesting.
  uint32_t max_remember_depth = 32;
  // Distinct registers with a rule in one row (<= kRowCapacity).
  uint32_t max_rules = kRowCapacity;
  // DWARF expression: operations executed, and stack entries.
  uint32_t max_expr_steps = 1000;
  uint32_t max_expr_stack = 64;
  // Bytes of one DWARF expression.
  uint32_t max_expr_bytes = 1024;
  // Bytes of one CIE or FDE record.
  uint64_t max_record_bytes = 16u << 20;
  // FDEs indexed by one linear scan of .eh_frame/.debug_frame.
  uint32_t max_index_entries = 4u << 20;
  // Binary-search probes in an .eh_frame_hdr table (log2 of any real table is < 32).
  uint32_t max_search_probes = 64;
  // Bytes read from target memory when building an image from memory alone.
  uint64_t max_image_bytes = 256u << 20;
  // Symbols loaded per image.
  uint32_t max_symbols = 4u << 20;
  // Program headers of one ELF image (file or target memory). Real objects have about a
  // dozen; the kernel refuses more than 64 KiB of them (1170 ELF64 entries).
  uint32_t max_program_headers = 1170;
  // Threads (NT_PRSTATUS notes) taken from one core; later ones are left out.
  uint32_t max_threads = 1u << 16;
  // NT_FILE entries taken from one core (the kernel's default vm.max_map_count is 65530).
  uint32_t max_file_mappings = 1u << 18;
  // Modules per target (link_map entries walked, mapped files considered).
  uint32_t max_modules = 4096;
  // AArch64 frame-pointer fallback, finding the caller's sp from the prologue of a function
  // without unwind info: instruction words scanned backwards from the pc for the end of the
  // previous function when no symbol gives the start, and instruction words decoded forward
  // from the start (real prologues set up the frame record within a dozen or so).
  uint32_t max_prologue_scan = 256;
  uint32_t max_prologue_insns = 32;
  // Addition (SFrame): frame row entries decoded for one SFrame function. V3 stores the count
  // in 16 bits; V2's 32-bit count is held to the same bound. FDE lookups in .sframe use
  // max_search_probes.
  uint32_t max_sframe_fres = 1u << 16;
  // Compressed cores (zstd, xz, lz4, gzip) are decompressed into a sparse temporary file.
  // Logical size of that file: real cores reach tens of GiB, mostly holes.
  uint64_t max_decompressed_bytes = uint64_t{1} << 40;
  // Bytes of data (non-zero blocks) written to it; 0 leaves the limit to the free space of
  // $TMPDIR, less a 64 MiB reserve, which always applies.
  uint64_t max_decompressed_disk_bytes = 0;
  // Decoder memory: the zstd window and liblzma's memory limit (lz4 and gzip need at most a
  // few MiB by their formats).
  uint64_t max_decompressor_memory = 512u << 20;
  // Addition (Go): entries of one pc-value table (.gopclntab pcsp) decoded per lookup; a Go
  // function has one entry per change of its frame size, a few dozen in large functions.
  uint32_t max_go_pcvalue_steps = 1u << 16;
  // Addition (Go source lines): calls inlined into one another at one pc, followed through
  // the inline tree (.gopclntab's FUNCDATA_InlTree). Go's inliner nests a few levels; a
  // malformed tree that loops stops here.
  uint32_t max_go_inline_depth = 64;
  // Perf maps (JIT code names, /tmp/perf-PID.map): bytes read from the file, entries kept.
  uint64_t max_perf_map_bytes = 256u << 20;
  uint32_t max_perf_map_entries = 1u << 22;
  // Executable mappings without a file (JIT code) taken from one target.
  uint32_t max_code_regions = 1u << 16;
  // Stack scan (after tables and frame pointers fail): stack words examined for a return
  // address per frame (Breakpad looks at 40 or so; musl's and Rust's frames stay well within
  // 512), and frames found by scanning per thread.
  uint32_t max_scan_words = 512;
  uint32_t max_scan_frames = 64;
  // Proof of a frame found without a table (unwind/validate.hpp): a direct call whose target
  // is not the callee's function may reach it by tail jumps; links of that chain followed,
  // functions searched in all, and bytes of one function searched for a jump (real sibling
  // chains are one or two links; functions past 64 KiB are rare and searched only that far).
  uint32_t max_tail_jumps = 4;
  uint32_t max_tail_jump_functions = 64;
  uint32_t max_tail_jump_bytes = 64u << 10;
  // Minidumps: stream directory entries, memory ranges (MemoryList and Memory64List, each
  // capped), and bytes of a text stream read (LinuxMaps, /proc/PID/maps, is the long one).
  uint32_t max_minidump_streams = 1u << 16;
  uint32_t max_minidump_memory_ranges = 1u << 20;
  uint64_t max_minidump_text_bytes = 64u << 20;
  // Bytes from a function's start to a pc inside it, assumed at most where no symbol or table
  // says where the function starts (a stripped static binary): a direct call's target must
  // then lie at or below the callee's pc by less than this (the largest real functions, an
  // interpreter's dispatch loop, stay well below 1 MiB).
  uint32_t max_function_bytes = 1u << 20;
  // Function starts one walk remembers (unwind/known_starts.hpp): the targets of the direct
  // calls that proved its frames not taken from a table, at most one per step, so max_frames
  // covers a whole walk. Past it a later start is not kept, and the proof of a callee whose start
  // nothing says is left with its other bounds (max_function_bytes).
  uint32_t max_known_starts = 2048;
  // Live processes: pages of target memory (4 KiB each) kept while its threads are stopped.
  uint32_t max_cached_pages = 4096;
  // Data extents of a file looked up for its content key (ehbt::sparse_sha256); past them the
  // rest of the file is read as data, which gives the same key, only slower.
  uint32_t max_content_key_extents = 1u << 20;
  // ImageStore (shared by the targets of a batch or of a resident `ehbt-triage watch`): images
  // kept for the next targets, and bytes of their files (0: no cap); past either, the least
  // recently opened are let go. One target maps at most max_modules files, so the default
  // never drops an image one target uses again.
  uint32_t max_stored_images = 4096;
  uint64_t max_stored_image_bytes = 0;
  // Source lines (engine/src/lines): bytes of DWARF sections (.debug_*) of one module's debug
  // file (and of its dwz file) that are opened at all (large C++ libraries carry a few GiB);
  // DIEs visited to find the scopes at one pc (a unit's top-level DIEs are scanned, so large
  // units visit tens of thousands); calls inlined at one pc kept, innermost first (real code
  // nests a dozen or so).
  // max_debug_bytes counts compressed sections (Debian's debug files) as inflated: libdw
  // holds them so.
  uint64_t max_debug_bytes = uint64_t{8} << 30;
  uint32_t max_line_dies = 1u << 20;
  uint32_t max_inline_depth = 64;
  // Addition (engine/src/lines/aranges_table.hpp): address ranges read from one file's
  // .debug_aranges (libc's has ~5000); past it the file's units are found through libdw.
  uint32_t max_aranges = 1u << 22;
  // Addition (debug cache, engine/src/lines/debug_cache.hpp): bytes of the uncompressed copies
  // of compressed debug files kept in the cache directory ($EHBT_CACHE_DIR, else
  // $XDG_CACHE_HOME/ehbt, else ~/.cache/ehbt; in debug/), least recently used removed first.
  // 0: no cache (libdw inflates the debug file's sections in every process, `--no-debug-cache`).
  uint64_t max_debug_cache_bytes = uint64_t{2} << 30;
  // Addition (persistent line answers, engine/src/lines/answer_cache.hpp): bytes of one file
  // of answers kept per DWARF file in lines/ of the same directory (past it nothing more is
  // added; the directory holds at most 64 times this). 0, or max_debug_cache_bytes 0: none.
  uint64_t max_line_answers_bytes = uint64_t{4} << 20;
};

}  // namespace ehbt
