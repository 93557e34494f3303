// SPDX-License-Identifier: Apache-2.0
// Google Benchmark for the engine's three stages on real libraries: entry lookup in
// .eh_frame_hdr, row evaluation (cold: parse + evaluate; warm: row cache), the linear-scan
// index build, and full in-process unwinds on a warm and a cold cache.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dwarf/cfi.hpp"
#include "ehbt/image.hpp"
#include "ehbt/unwinder.hpp"

namespace {

using ehbt::Image;
namespace dw = ehbt::dwarf;

const char* kLibraries[] = {"/lib/x86_64-linux-gnu/libc.so.6",
                            "/lib/x86_64-linux-gnu/libstdc++.so.6"};

std::shared_ptr<Image> open_or_die(const char* path) {
  auto img = Image::open(path);
  if (!img) {
    std::fprintf(stderr, "cannot open %s: %s\n", path, img.error().c_str());
    std::abort();
  }
  return *img;
}

dw::Format format_of(const Image& img) {
  return {img.big_endian(), img.address_size()};
}

dw::SectionView view(const ehbt::SectionRef& s) {
  return {s.addr, s.bytes};
}

// Start addresses of every FDE, used as lookup targets (pc inside each function).
std::vector<uint64_t> fde_pcs(const Image& img) {
  dw::ImageCfi cfi(view(img.eh_frame_hdr()), view(img.eh_frame()), {}, format_of(img),
                   {0, img.eh_frame_hdr().addr}, ehbt::Limits{});
  std::vector<uint64_t> pcs;
  cfi.for_each_fde(
      dw::SectionKind::EhFrame,
      [&](const dw::Fde& fde, const dw::Cie&) {
        if (fde.pc_end > fde.pc_begin)
          pcs.push_back(fde.pc_begin + (fde.pc_end - fde.pc_begin) / 2);
      },
      [](const dw::Error&) {});
  std::shuffle(pcs.begin(), pcs.end(), std::mt19937_64(42));
  return pcs;
}

struct LibFixture {
  std::shared_ptr<Image> img;
  std::vector<uint64_t> pcs;
};

const LibFixture& lib(int i) {
  static LibFixture fx[2];
  if (!fx[i].img) {
    fx[i].img = open_or_die(kLibraries[i]);
    fx[i].pcs = fde_pcs(*fx[i].img);
  }
  return fx[i];
}

void BM_HdrLookup(benchmark::State& state) {
  const auto& fx = lib(state.range(0));
  auto hdr = dw::EhFrameHdr::parse(view(fx.img->eh_frame_hdr()), format_of(*fx.img), {});
  if (!hdr) state.SkipWithError("no hdr");
  std::size_t i = 0;
  for (auto _ : state) {
    auto r = hdr->lookup(fx.pcs[i++ % fx.pcs.size()]);
    benchmark::DoNotOptimize(r);
  }
  state.SetLabel(kLibraries[state.range(0)]);
}
BENCHMARK(BM_HdrLookup)->Arg(0)->Arg(1);

// Cold: a fresh ImageCfi per batch of lookups would measure construction; instead look up
// each pc once through find_fde + evaluate_row (no row cache involved).
void BM_RowCold(benchmark::State& state) {
  const auto& fx = lib(state.range(0));
  dw::ImageCfi cfi(view(fx.img->eh_frame_hdr()), view(fx.img->eh_frame()), {}, format_of(*fx.img),
                   {0, fx.img->eh_frame_hdr().addr}, ehbt::Limits{});
  std::size_t i = 0;
  for (auto _ : state) {
    uint64_t pc = fx.pcs[i++ % fx.pcs.size()];
    auto f = cfi.find_fde(dw::SectionKind::EhFrame, pc);
    if (f) {
      auto row = dw::evaluate_row(f->second, f->first, pc, format_of(*fx.img), ehbt::Limits{});
      benchmark::DoNotOptimize(row);
    }
  }
  state.SetLabel(kLibraries[state.range(0)]);
}
BENCHMARK(BM_RowCold)->Arg(0)->Arg(1);

// Warm: the same small working set of pcs again and again (a deep stack revisited).
void BM_RowWarm(benchmark::State& state) {
  const auto& fx = lib(state.range(0));
  dw::ImageCfi cfi(view(fx.img->eh_frame_hdr()), view(fx.img->eh_frame()), {}, format_of(*fx.img),
                   {0, fx.img->eh_frame_hdr().addr}, ehbt::Limits{});
  std::size_t i = 0;
  for (auto _ : state) {
    auto row = cfi.find_row(fx.pcs[i++ % 32]);
    benchmark::DoNotOptimize(row);
  }
  state.SetLabel(kLibraries[state.range(0)]);
}
BENCHMARK(BM_RowWarm)->Arg(0)->Arg(1);

// The sorted index built by one linear scan when there is no .eh_frame_hdr table.
// One-shot naming, as `ehbt core` validates fallback frames: a fresh image asked for the
// functions of N pcs one at a time before any table is built (the first kMaxSymbolPasses
// distinct lookups are passes over the symbol table; the first pass learns what the table
// offers, and the later ones read only the entries near their pc). On node's 110,000-entry
// .symtab where node is installed, else libc (whose small .dynsym builds the table at once).
void BM_SymbolizeOneShot(benchmark::State& state) {
  static const char* path = access("/usr/bin/node", R_OK) == 0 ? "/usr/bin/node" : kLibraries[0];
  static const std::vector<uint64_t> pcs = fde_pcs(*open_or_die(path));
  for (auto _ : state) {
    state.PauseTiming();
    auto img = open_or_die(path);
    state.ResumeTiming();
    for (int64_t i = 0; i < state.range(0); ++i) {
      benchmark::DoNotOptimize(img->symbolize(pcs[static_cast<std::size_t>(i) % pcs.size()]));
    }
    state.PauseTiming();
    img.reset();
    state.ResumeTiming();
  }
  state.SetLabel(path);
}
BENCHMARK(BM_SymbolizeOneShot)->Arg(1)->Arg(8)->Unit(benchmark::kMicrosecond);

void BM_IndexBuild(benchmark::State& state) {
  const auto& fx = lib(state.range(0));
  for (auto _ : state) {
    dw::ImageCfi cfi({}, view(fx.img->eh_frame()), {}, format_of(*fx.img), {}, ehbt::Limits{});
    auto row = cfi.find_row(fx.pcs[0]);
    benchmark::DoNotOptimize(row);
  }
  state.SetLabel(kLibraries[state.range(0)]);
}
BENCHMARK(BM_IndexBuild)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// ---- full unwinds of this process's own stack ----

int collect_module(dl_phdr_info* info, size_t, void* data) {
  auto* modules = static_cast<ehbt::ModuleSet*>(data);
  std::string path = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : "/proc/self/exe";
  if (path.find("linux-vdso") != std::string::npos) return 0;
  auto img = Image::open(path);
  if (!img) return 0;
  ehbt::Module m;
  m.path = path;
  m.file = path;
  m.bias = info->dlpi_addr;
  m.start = UINT64_MAX;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    m.start = std::min<uint64_t>(m.start, info->dlpi_addr + ph.p_vaddr);
    m.end = std::max<uint64_t>(m.end, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
  }
  m.image = *img;
  modules->add(std::move(m));
  return 0;
}

ehbt::RegisterSet regs_from(const ucontext_t& uc) {
  ehbt::RegisterSet r(ehbt::Arch::X86_64);
  const greg_t* g = uc.uc_mcontext.gregs;
  const int dwarf_to_greg[] = {REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI,
                               REG_RBP, REG_RSP, REG_R8,  REG_R9,  REG_R10, REG_R11,
                               REG_R12, REG_R13, REG_R14, REG_R15};
  for (uint16_t i = 0; i < 16; ++i) r.set(i, static_cast<uint64_t>(g[dwarf_to_greg[i]]));
  r.set_pc(static_cast<uint64_t>(g[REG_RIP]));
  return r;
}

// The frames one walk gave, and the time per frame (an iteration's time over `frames`).
void count_frames(benchmark::State& state, std::size_t frames) {
  state.counters["frames"] = static_cast<double>(frames);
  state.counters["ns_per_frame"] = benchmark::Counter(
      static_cast<double>(frames),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

struct StackCopy {
  ehbt::RegisterSet regs;
  ehbt::BufferMemory memory;
};

// Captures the registers and copies the stack from the deepest frame, while every frame above
// it is still live: the copy walks cleanly to _start. The capture is a call of its own, so
// that each level of the recursion keeps a small frame (one saved register, as most frames).
__attribute__((noinline)) void capture_stack(StackCopy& out) {
  ucontext_t uc;
  getcontext(&uc);
  out.regs = regs_from(uc);
  const uint64_t sp = out.regs.sp();
  std::vector<std::byte> bytes(256 * 1024);
  ehbt::SelfMemory self;
  bytes.resize(self.read(sp, bytes));
  out.memory.add(sp, std::move(bytes));
}

__attribute__((noinline)) int copy_stack_at_depth(int depth, StackCopy& out) {
  if (depth == 0) {
    capture_stack(out);
    return 1;
  }
  int r = copy_stack_at_depth(depth - 1, out);
  benchmark::DoNotOptimize(r);
  return r + 1;
}

// warm: the same stack walked again with every cache kept; cold: each walk starts with no
// cache (each image's CFI/SFrame caches dropped, untimed). keep_registers: every frame keeps
// its register set (what the Python module and debugger plugins ask for); off, the walk keeps
// registers only for the frame being stepped and its caller (what the CLI does).
void BM_Unwind(benchmark::State& state, bool warm, bool keep_registers) {
  ehbt::ModuleSet modules;
  dl_iterate_phdr(collect_module, &modules);
  // Copied in the deepest frame itself: a copy taken after the recursion returned would hold
  // its outer frames overwritten by the calls made since (the walk then ended early, in
  // garbage, some 19 frames short of _start).
  StackCopy copy;
  copy_stack_at_depth(static_cast<int>(state.range(0)), copy);
  const ehbt::RegisterSet& regs = copy.regs;
  ehbt::BufferMemory& stack = copy.memory;
  ehbt::Unwinder unwinder;
  ehbt::UnwindOptions options;
  options.keep_registers = keep_registers;
  std::size_t frames = 0;
  std::string why;
  for (auto _ : state) {
    // Cold: the caches are dropped outside the timed interval, which is timed by hand (the
    // case uses manual time): PauseTiming/ResumeTiming read the process CPU clock, a system
    // call each, and part of that landed in the measurement (~10% of a cold walk here).
    ehbt::Backtrace bt;
    if (warm) {
      bt = unwinder.unwind(regs, stack, modules, options);
    } else {
      for (const auto& m : modules.modules()) m.image->set_cache(nullptr);
      const auto start = std::chrono::steady_clock::now();
      bt = unwinder.unwind(regs, stack, modules, options);
      const auto end = std::chrono::steady_clock::now();
      state.SetIterationTime(std::chrono::duration<double>(end - start).count());
    }
    frames = bt.frames.size();
    if (bt.stop != ehbt::StopReason::Outermost) why = bt.detail;
    benchmark::DoNotOptimize(bt);
  }
  count_frames(state, frames);
  // How the walk ended, when not at the outermost frame (each run captures a new stack).
  if (!why.empty()) state.SetLabel(why);
}
BENCHMARK_CAPTURE(BM_Unwind, warm, true, false)->Arg(64)->Arg(512);
BENCHMARK_CAPTURE(BM_Unwind, cold, false, false)
    ->Arg(64)
    ->Arg(512)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Unwind, warm_regs, true, true)->Arg(64)->Arg(512);

// The anchors: glibc's backtrace() and libunwind's unw_backtrace() walking this thread's own
// live stack at the same depth (their caches warm after the first call). libunwind is
// loaded at run time (no headers needed); the case reports an error when it is not installed.
using BacktraceFn = int (*)(void**, int);

__attribute__((noinline)) std::size_t walk_at_depth(int depth, benchmark::State& state,
                                                    BacktraceFn fn) {
  if (depth == 0) {
    std::vector<void*> pcs(4096);
    std::size_t frames = 0;
    for (auto _ : state) {
      frames = static_cast<std::size_t>(fn(pcs.data(), static_cast<int>(pcs.size())));
      benchmark::DoNotOptimize(pcs.data());
    }
    return frames;
  }
  std::size_t r = walk_at_depth(depth - 1, state, fn);
  benchmark::DoNotOptimize(r);
  return r;
}

void BM_GlibcBacktrace(benchmark::State& state) {
  count_frames(state, walk_at_depth(static_cast<int>(state.range(0)), state, &backtrace));
}
BENCHMARK(BM_GlibcBacktrace)->Arg(64)->Arg(512);

void BM_LibunwindBacktrace(benchmark::State& state) {
  void* lib = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  auto fn = lib != nullptr ? reinterpret_cast<BacktraceFn>(dlsym(lib, "unw_backtrace")) : nullptr;
  if (fn == nullptr) {
    state.SkipWithError("libunwind.so.8 with unw_backtrace not found");
    for (auto _ : state) {
    }
    return;
  }
  count_frames(state, walk_at_depth(static_cast<int>(state.range(0)), state, fn));
}
BENCHMARK(BM_LibunwindBacktrace)->Arg(64)->Arg(512);

// The same warm walk through each table source: .eh_frame, and SFrame tables converted in
// memory from it (V3 SFrame only; V2 Auto, which takes .eh_frame where V2 cannot express a
// function). One untimed walk first builds every table the walk needs, so the loop measures
// the per-frame step alone. `frames` tells whether a walk reached as far as the others.
void BM_UnwindSource(benchmark::State& state, ehbt::SourcePreference source, bool converted,
                     uint8_t version) {
  ehbt::ModuleSet modules;
  dl_iterate_phdr(collect_module, &modules);
  StackCopy copy;
  copy_stack_at_depth(static_cast<int>(state.range(0)), copy);
  const ehbt::RegisterSet& regs = copy.regs;
  ehbt::BufferMemory& stack = copy.memory;
  ehbt::UnwindOptions options;
  options.source = source;
  options.sframe_from_eh_frame = converted;
  options.sframe_version = version;
  ehbt::Unwinder unwinder;
  auto first = unwinder.unwind(regs, stack, modules, options);
  std::size_t frames = first.frames.size();
  for (auto _ : state) {
    auto bt = unwinder.unwind(regs, stack, modules, options);
    frames = bt.frames.size();
    benchmark::DoNotOptimize(bt);
  }
  count_frames(state, frames);
  state.SetLabel(std::string(ehbt::to_string(first.stop)) + " " + first.detail);
}
BENCHMARK_CAPTURE(BM_UnwindSource, eh_frame, ehbt::SourcePreference::EhFrame, false, 3)->Arg(64);
BENCHMARK_CAPTURE(BM_UnwindSource, sframe_v3, ehbt::SourcePreference::SFrame, true, 3)->Arg(64);
BENCHMARK_CAPTURE(BM_UnwindSource, auto_v2, ehbt::SourcePreference::Auto, true, 2)->Arg(64);
BENCHMARK_CAPTURE(BM_UnwindSource, auto_native, ehbt::SourcePreference::Auto, false, 3)->Arg(64);

}  // namespace

BENCHMARK_MAIN();
