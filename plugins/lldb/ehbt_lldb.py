# SPDX-License-Identifier: Apache-2.0
"""ehbt for LLDB: an `ehbt` backtrace command and a frame recognizer annotating LLDB's frames.

    (lldb) command script import PREFIX/share/ehbt/lldb/ehbt_lldb.py
    (lldb) ehbt [--all-threads|--all|-a] [--json|-j] [--max-frames|--count|-c N] ...  (help ehbt)
    (lldb) frame variable            # also shows ehbt_cfa, ehbt_source, ehbt_agrees

This file only talks to LLDB: the command's options, policy and output are ehbt.frontend's,
shared with the GDB plugin; docs/lldb.md and plugins/lldb/README.md say what the engine is
given (frame 0's registers, SBProcess memory, LLDB's modules plus those the engine finds in
the core) and what the recognizer adds. The package is found through EHBT_PYTHONPATH, then
PREFIX/lib/python3[.X]/dist-packages relative to this file, then build/engine/python.

The recognizer costs one engine step per stop for frame 0 (LLDB asks for it at every stop);
the whole walk runs once per stop, when a deeper frame is looked at. LLDB 16 lets no plugin
unwind for it: bt, up and finish keep LLDB's own unwinder (README: what newer LLDB's scripted
frame providers would allow).
"""

import os
import re
import sys

import lldb


def _add_package_path():
    here = os.path.dirname(os.path.realpath(__file__))
    candidates = [p for p in os.environ.get("EHBT_PYTHONPATH", "").split(os.pathsep) if p]
    for site in ("python3", "python%d.%d" % sys.version_info[:2]):
        candidates.append(os.path.join(here, "..", "..", "..", "lib", site, "dist-packages"))
    candidates.append(os.path.join(here, "..", "..", "build", "engine", "python"))
    for path in candidates:
        path = os.path.abspath(path)
        if os.path.isfile(os.path.join(path, "ehbt", "__init__.py")):
            if path not in sys.path:
                sys.path.insert(0, path)
            return


_add_package_path()

import ehbt  # noqa: E402  (after the path set-up above)
from ehbt import debugger_support as support, frontend  # noqa: E402

_MASK = (1 << 64) - 1
_INVALID = lldb.LLDB_INVALID_ADDRESS
# One walk covers the whole stack of any sane program (the recognizer's walks).
_RECOGNIZER_LIMITS = {"max_frames": 1 << 16}
_NO_OPTIONS = frontend.parse("", "lldb")
# LLDB's process plugins for dump files: an ELF core or a minidump (`lldb -c x.dmp`), which
# the engine opens itself (the file mapped into this process) for its signal and modules.
_DUMP_PLUGINS = ("elf-core", "minidump")
# ehbt_source is a char array of this length, of a type of its own ($ehbt_source_t, a typedef
# declared in the target's scratch context): its type summary (a string) applies to ehbt's
# values only, never to a char array of the user's program.
_SOURCE_LEN = 19
_SOURCE_TYPE = "$ehbt_source_t"


_Error = frontend.UsageError  # a user-facing error of the ehbt command (one line)


# ---------------------------------------------------------------------------------------------
# What LLDB knows: architecture, registers, memory, modules, symbols.


def _engine_arch(target):
    triple = target.GetTriple() or ""
    return frontend.engine_arch(triple.split("-")[0]) if triple else None


def _register(frame, arch, name):
    # LLDB's own name may be another one (aarch64's x29 is its "fp").
    for candidate in (name,) + ehbt.register_aliases(arch, name):
        value = frame.FindRegister(candidate)
        if value.IsValid():
            err = lldb.SBError()
            number = value.GetValueAsUnsigned(err, 0)
            if err.Success():
                return number & _MASK
    return None


def _thread_registers(thread, arch):
    """RegisterSet of frame 0 of a thread, from LLDB."""
    frame = thread.GetFrameAtIndex(0)
    if not frame.IsValid():
        raise _Error("ehbt: thread %d has no frame 0" % thread.GetIndexID())
    regs = ehbt.RegisterSet(arch)
    names, pc_name, _sp_name = ehbt.general_registers(arch)
    for name, num in names.items():
        value = _register(frame, arch, name)
        if value is not None:
            regs[num] = value
    pc = _register(frame, arch, pc_name)
    regs.pc = pc if pc is not None else frame.GetPC() & _MASK
    return regs


def _memory_reader(process):
    """read(addr, size) -> bytes for the engine; an SBError is raised as a fault."""
    read_memory = process.ReadMemory

    def read(addr, size):
        err = lldb.SBError()
        data = read_memory(addr, size, err)
        if err.Fail() or data is None:
            raise MemoryError("cannot read %d bytes at 0x%x: %s" % (size, addr, err.GetCString()))
        return data

    return read


def _regions(process):
    """The process's mappings as LLDB knows them (a core's segments, a live process's maps),
    as Unwinder.unwind's `regions`: what bounds a stack scan to the stack's mapping. None when
    LLDB lists none."""
    regions, info = process.GetMemoryRegions(), lldb.SBMemoryRegionInfo()
    out = []
    for i in range(regions.GetSize()):
        if regions.GetMemoryRegionAtIndex(i, info) and info.IsMapped():
            out.append((info.GetRegionBase(), info.GetRegionEnd()))
    return out or None


def _module_bias(target, module):
    """Load address minus file address of the first loaded section; None if not loaded."""
    for section in module.section_iter():
        load = section.GetLoadAddress(target)
        if load != _INVALID and section.GetFileAddress() != _INVALID:
            return (load - section.GetFileAddress()) & _MASK
    return None


def _module_signature(target):
    """What the module list depends on: each module's file and where it is loaded."""
    sig = []
    for module in target.module_iter():
        sig.append((module.GetFileSpec().fullpath, module.GetUUIDString(),
                    _module_bias(target, module)))
    return tuple(sig)


def _lldb_module(target, module, images, read):
    """An ehbt.Module for one of LLDB's modules, or None (not loaded, not openable)."""
    bias = _module_bias(target, module)
    if bias is None:
        return None
    path = module.GetFileSpec().fullpath or ""
    platform_path = module.GetPlatformFileSpec().fullpath or path
    header = module.GetObjectFileHeaderAddress()
    header_load = header.GetLoadAddress(target) if header.IsValid() else _INVALID
    if os.path.basename(path) == "[vdso]" or not os.path.isfile(path):
        if header_load == _INVALID:
            return None
        return support.memory_module(read, header_load,
                                              os.path.basename(path) or "[vdso]")
    image = support.cached_image(images, path)
    if image is None:
        return None
    if image.elf_type == support.ET_EXEC:
        bias = 0
    return ehbt.Module(image, path=platform_path, bias=bias, file=path)


def _platform_sysroot(debugger):
    """The sysroot of LLDB's selected platform (`platform select ... --sysroot DIR`), or None."""
    out = lldb.SBCommandReturnObject()
    debugger.GetCommandInterpreter().HandleCommand("platform status", out)
    for line in (out.GetOutput() or "").splitlines():
        key, _, value = line.strip().partition(":")
        if key == "Sysroot" and value.strip():
            return value.strip()
    return None


def _debug_dirs(debugger):
    """LLDB's target.debug-file-search-paths: where the engine looks for separate debug files
    first (DIR/.build-id/xx/rest.debug, DIR/<debuglink>), as LLDB itself does."""
    values = lldb.SBDebugger.GetInternalVariableValue("target.debug-file-search-paths",
                                                      debugger.GetInstanceName())
    text = " ".join(values.GetStringAtIndex(i) for i in range(values.GetSize()))
    # LLDB lists a file-list setting as "[0]: /a  [1]: /b" on one line.
    parts = re.split(r"\s*\[\d+\]: ", text)
    return tuple(p.strip() for p in parts if p.strip())


def _symbol_from_lldb(target, addr):
    """(name, load address of start) of LLDB's ELF symbol covering addr, or None."""
    symbol = target.ResolveLoadAddress(addr).GetSymbol()
    if not symbol.IsValid() or symbol.IsSynthetic():
        return None
    name = symbol.GetName()
    if not name or name.startswith("___lldb_unnamed_symbol"):
        return None
    if "@" in name and not name.endswith("@plt"):
        name = name.split("@")[0]  # the symbol version (__libc_start_main@@GLIBC_2.34)
    start = symbol.GetStartAddress().GetLoadAddress(target)
    end = symbol.GetEndAddress().GetLoadAddress(target)
    if start == _INVALID or addr < start or (end != _INVALID and start < end <= addr):
        return None
    return name, start


# ---------------------------------------------------------------------------------------------
# One process as the engine sees it: memory, modules, the core's own records.

class _Context:
    """Engine-side state of one LLDB process, kept across commands and stops."""

    def __init__(self):
        self.images = {}  # path -> ehbt.Image
        self.cores = support.EngineCores()
        self.core_paths = {}  # frozenset of tids -> core path or None
        self.modules_key = self.modules = None
        self.walks = {}  # (pid, stop id, tid) -> {"first": [...], "walk": [...]}
        self.walks_done = 0
        self.sysroots = ()  # the last --sysroot list given to the command (the recognizer's)
        self.perf_map = None  # and the last --perf-map
        self.regions_key = self.region_list = None
        self.live_warnings = []  # what reading a live process's JIT code said

    def regions(self, process):
        """_regions(process), asked again at each stop (mappings change while it runs)."""
        key = (process.GetProcessID(), process.GetStopID())
        if self.regions_key != key:
            self.regions_key, self.region_list = key, _regions(process)
        return self.region_list

    def options(self, opts=_NO_OPTIONS):
        """The command's options with the sysroots kept from an earlier command."""
        if opts["sysroot"]:
            self.sysroots = tuple(opts["sysroot"])
        if opts["perf_map"]:
            self.perf_map = opts["perf_map"]
        return dict(opts, sysroot=list(self.sysroots), perf_map=self.perf_map)

    def core_path(self, process, opts=_NO_OPTIONS):
        if opts["core"] or process.GetPluginName() not in _DUMP_PLUGINS:
            return opts["core"]
        tids = frozenset(t.GetThreadID() for t in process)
        if tids not in self.core_paths:
            self.core_paths[tids] = self.cores.find_mapped(tids)
        return self.core_paths[tids]

    def engine_core(self, debugger, target, process, opts=_NO_OPTIONS):
        core = self.core_path(process, opts)
        if not core:
            return None
        platform = _platform_sysroot(debugger)
        roots = opts["sysroot"] + [platform] * (platform not in opts["sysroot"] and bool(platform))
        return self.cores.get(core, roots, opts["exe"] or target.GetExecutable().fullpath,
                              opts["debug_dir"] + list(_debug_dirs(debugger)), opts["perf_map"])

    def module_set(self, debugger, target, process, opts=_NO_OPTIONS):
        """The ModuleSet of the walks: LLDB's modules (with the core's), and the JIT code of
        the engine's core target or, for a process LLDB runs on this machine, of the process
        as it is at this stop (read again at each stop: a JIT maps and names code while the
        process runs)."""
        engine = self.engine_core(debugger, target, process, opts)
        live = (engine is None and process.GetPluginName() not in _DUMP_PLUGINS
                and target.GetPlatform().GetName() == "host")
        key = (_module_signature(target), id(engine), self.core_path(process, opts),
               (process.GetProcessID(), process.GetStopID(), opts["perf_map"]) if live else None)
        if self.modules is not None and self.modules_key == key:
            return self.modules
        read = _memory_reader(process)
        modules = [m for m in (_lldb_module(target, module, self.images, read)
                               for module in target.module_iter()) if m is not None]
        if engine is not None:
            modules = support.merge_modules(modules, list(engine.modules))
        elif process.GetPluginName() not in _DUMP_PLUGINS:
            modules = support.respell_live_modules(modules, process.GetProcessID())
        self.live_warnings = []
        self.modules = support.module_set(modules, engine,
                                          process.GetProcessID() if live else None,
                                          opts["perf_map"], self.live_warnings)
        self.modules_key = key
        self._keep = engine  # id(engine) in the key stays its own while the set is kept
        return self.modules


_contexts = {}


def _context(process):
    return _contexts.setdefault(process.GetUniqueID(), _Context())


def _unwind(debugger, target, process, thread, ctx, opts=_NO_OPTIONS, limits=None):
    arch = _engine_arch(target)
    if arch is None:
        raise _Error("ehbt: unsupported architecture %s" % target.GetTriple())
    regs = _thread_registers(thread, arch)
    modules = ctx.module_set(debugger, target, process, opts)
    backtrace = ehbt.Unwinder(limits or frontend.limits(opts)).unwind(
        regs, _memory_reader(process), modules, options=frontend.unwind_options(opts),
        module_files=True, regions=ctx.regions(process))
    return arch, backtrace


def _symbol_fallback(target):
    """symbol_of(frame) for the frame lines: LLDB's ELF symbol at the frame's lookup address,
    asked only where the engine knows no symbol."""
    return lambda frame: _symbol_from_lldb(target, frame.lookup_pc)


def _live_signal(thread):
    """The signal record of a live thread's stop: its siginfo (a breakpoint is the SIGTRAP of
    its trap instruction), else the signal LLDB stopped it for, code unknown, else None."""
    try:
        info = thread.GetSiginfo()
    except (AttributeError, TypeError):
        info = None
    if info is not None and info.IsValid():
        number = info.GetChildMemberWithName("si_signo").GetValueAsSigned(0)
        code = info.GetChildMemberWithName("si_code").GetValueAsSigned(0)
        address = None
        if frontend.carries_fault_address(number):
            fault = info.GetValueForExpressionPath("._sifields._sigfault.si_addr")
            if fault.IsValid():
                address = fault.GetValueAsUnsigned(0) & _MASK
        if number:
            return frontend.stop_signal(number, code, address)
    if thread.GetStopReason() == lldb.eStopReasonSignal:
        return frontend.stop_signal(thread.GetStopReasonDataAtIndex(0))
    return None


def _lldb_frames(thread, limit):
    """LLDB's own stack frames [(pc, name)] (an inlined call shares its caller's frame)."""
    out = []
    for frame in thread:
        if len(out) >= limit:
            break
        if not frame.IsInlined():
            out.append((frame.GetPC() & _MASK, frame.GetFunctionName() or "??"))
    return out


# ---------------------------------------------------------------------------------------------
# The `ehbt` command.


class EhbtCommand:
    def __init__(self, debugger, internal_dict):
        pass

    def get_short_help(self):
        return "Backtrace computed by the ehbt engine (--all-threads, --json, --max-frames N)."

    def get_long_help(self):
        return ("Backtrace computed by the ehbt engine, independently of LLDB's unwinder.\n"
                "ehbt %s (the version of the ehbt package this plugin loaded).\n\n%s\n\n"
                "frame variable shows ehbt_cfa, ehbt_source and ehbt_agrees for each of\n"
                "LLDB's frames: the engine's CFA and unwind source at the same stack\n"
                "depth, and whether LLDB's frame and caller match the engine's."
                % (ehbt.__version__, frontend.help_text("lldb")))

    def __call__(self, debugger, command, exe_ctx, result):
        # Every failure is one line: no Python traceback reaches the user.
        try:
            self._run(debugger, frontend.parse(command, "lldb"), exe_ctx, result)
        except Exception as e:  # noqa: BLE001
            result.SetError(support.one_line(e))

    def _run(self, debugger, opts, exe_ctx, result):
        if opts["version"]:
            result.AppendMessage("ehbt %s" % ehbt.__version__)
            return
        target, process = exe_ctx.GetTarget(), exe_ctx.GetProcess()
        if not target.IsValid() or not process.IsValid() or process.GetNumThreads() == 0:
            raise _Error("ehbt: no process (launch, attach or load a core first)")
        if process.GetState() not in (lldb.eStateStopped, lldb.eStateCrashed,
                                      lldb.eStateSuspended):
            raise _Error("ehbt: the process is not stopped")
        ctx = _context(process)
        opts = ctx.options(opts)
        core = ctx.core_path(process, opts)
        engine_core = ctx.engine_core(debugger, target, process, opts)
        if opts["core"] and engine_core is None:
            raise _Error("ehbt: cannot read the core %s: %s" % (
                opts["core"], ctx.cores.errors.get(opts["core"], "not an ELF core")))
        selected = exe_ctx.GetThread()
        selected = selected if selected.IsValid() else process.GetSelectedThread()
        threads = frontend.pick_threads(opts, sorted(process, key=lambda t: t.GetIndexID()),
                                        selected, lambda t: t.GetThreadID())
        results = []
        for thread in threads:
            arch, backtrace = _unwind(debugger, target, process, thread, ctx, opts)
            host = _lldb_frames(thread, opts["max_frames"] or 2048) if opts["compare"] else None
            results.append((thread.GetThreadID(), arch, backtrace, host))
        # The stop's signal: a core's own record (and crashing thread); live, the siginfo of
        # the thread LLDB selected at the stop.
        live = process.GetPluginName() not in _DUMP_PLUGINS
        signal, signal_tid = frontend.core_signal(engine_core)
        if live and engine_core is None:
            stopped = process.GetSelectedThread()
            signal = _live_signal(stopped) if stopped.IsValid() else None
            signal_tid = stopped.GetThreadID() if signal is not None else None
        symbol_of = _symbol_fallback(target)
        if not opts["json"]:
            result.AppendMessage(frontend.text(results, opts, signal, signal_tid, host="LLDB",
                                               symbol_of=symbol_of))
            return
        pid = process.GetProcessID() if live else None
        modules = ctx.module_set(debugger, target, process, opts)
        exe, warnings = frontend.executable_and_warnings(
            target.GetExecutable().fullpath or None, engine_core, pid, ctx.live_warnings)
        result.AppendMessage(frontend.document(
            results, modules, exe, core=core, pid=pid, warnings=warnings, signal=signal,
            signal_tid=signal_tid, arch=_engine_arch(target), symbol_of=symbol_of,
            input_format=engine_core.input_format if engine_core else None,
            lines=not opts["no_lines"], debug_cache=not opts.get("no_debug_cache")))


# ---------------------------------------------------------------------------------------------
# The frame recognizer.


def _lldb_stack(thread, index):
    """LLDB's stack frames, fetched up to the one after the stack frame `index` belongs to:
    (pc of each stack frame, {frame index: stack depth}). LLDB unwinds only as far as asked."""
    pairs = []
    i = 0
    while True:
        frame = thread.GetFrameAtIndex(i)
        if not frame.IsValid():
            break
        pairs.append((frame.GetPC() & _MASK, frame.IsInlined()))
        groups, depth_of = support.physical_frames(pairs)
        if i >= index and len(groups) >= depth_of[index] + 2:
            break
        i += 1
    return support.physical_frames(pairs)


def _annotation(frame):
    """(cfa, source, agrees) of the stack frame an LLDB frame belongs to."""
    thread = frame.GetThread()
    process = thread.GetProcess()
    target = process.GetTarget()
    debugger = target.GetDebugger()
    ctx = _context(process)
    key = (process.GetProcessID(), process.GetStopID(), thread.GetThreadID())
    if key not in ctx.walks:  # only the entries of the current stop are kept
        ctx.walks = {k: v for k, v in ctx.walks.items() if k[:2] == key[:2]}
        ctx.walks[key] = {}
    index = frame.GetFrameID()
    lldb_pcs, depth_of = _lldb_stack(thread, index)
    if index >= len(depth_of):
        return None
    arch = _engine_arch(target)

    def first_two():
        modules = ctx.module_set(debugger, target, process, ctx.options())
        return support.first_two_frames(_thread_registers(thread, arch), modules,
                                        _memory_reader(process),
                                        ctx.regions(process)) if arch else []

    def whole_walk():
        ctx.walks_done += 1
        bt = _unwind(debugger, target, process, thread, ctx, ctx.options(),
                     limits=ehbt.Limits(**_RECOGNIZER_LIMITS))[1]
        return [(f.pc, f.cfa, f.source) for f in bt.frames]

    return support.annotation(ctx.walks[key], depth_of[index], lldb_pcs, first_two,
                              whole_walk)


def _value_bytes(target, number, size):
    big = target.GetByteOrder() == lldb.eByteOrderBig
    return (number & ((1 << (8 * size)) - 1)).to_bytes(size, "big" if big else "little")


def _make_value(target, name, raw, sbtype):
    err = lldb.SBError()
    data = lldb.SBData()
    data.SetData(err, raw, target.GetByteOrder(), target.GetAddressByteSize())
    return target.CreateValueFromData(name, data, sbtype)


_source_types = {}  # debugger id -> SBType of $ehbt_source_t


def _source_type(target):
    """The SBType $ehbt_source_t (char[_SOURCE_LEN]), declared once per debugger.

    LLDB 16's Python API makes no new types; a persistent typedef declared through the
    expression parser gives ehbt_source a type name no program has. It is declared in the
    debugger's dummy target, which has no process: declaring it in the user's target would
    let LLDB allocate expression memory by calling mmap inside a live process (and so change
    its state, down to the siginfo of its stop). Falls back to a plain char array."""
    debugger = target.GetDebugger()
    found = _source_types.get(debugger.GetID())
    if found is None:
        found = target.GetBasicType(lldb.eBasicTypeChar).GetArrayType(_SOURCE_LEN)
        dummy = debugger.GetDummyTarget()
        options = lldb.SBExpressionOptions()
        options.SetAllowJIT(False)
        options.SetTryAllThreads(False)
        probe = "(%s *)0" % _SOURCE_TYPE
        if dummy.IsValid():
            value = dummy.EvaluateExpression(probe, options)
            if not value.GetError().Success():
                dummy.EvaluateExpression("typedef char %s[%d];" % (_SOURCE_TYPE, _SOURCE_LEN),
                                         options)
                value = dummy.EvaluateExpression(probe, options)
            pointee = value.GetType().GetPointeeType() if value.GetError().Success() else None
            if pointee is not None and pointee.IsValid() and \
                    pointee.GetByteSize() == _SOURCE_LEN:
                found = pointee
        _source_types[debugger.GetID()] = found
    return found


def _annotation_values(target, cfa, source, agrees):
    size = target.GetAddressByteSize()
    pointer = target.GetBasicType(lldb.eBasicTypeVoid).GetPointerType()
    text = source.encode()[:_SOURCE_LEN - 1].ljust(_SOURCE_LEN, b"\0")
    chars = _source_type(target)
    boolean = target.GetBasicType(lldb.eBasicTypeBool)
    return [
        _make_value(target, "ehbt_cfa", _value_bytes(target, cfa, size), pointer),
        _make_value(target, "ehbt_source", text, chars),
        _make_value(target, "ehbt_agrees", b"\x01" if agrees else b"\x00", boolean),
    ]


class EhbtFrameRecognizer:
    """Annotates each of LLDB's frames with the engine's view of the same stack depth."""

    def get_recognized_arguments(self, frame):
        try:
            found = _annotation(frame)
            if found is None:
                return []
            target = frame.GetThread().GetProcess().GetTarget()
            return _annotation_values(target, *found)
        except Exception:  # noqa: BLE001  (never break LLDB's frame machinery)
            return []


def _source_summary(valobj, _internal_dict):
    """ehbt_source (a char array) as a string."""
    data = valobj.GetData()
    err = lldb.SBError()
    raw = data.ReadRawData(err, 0, data.GetByteSize()) if data.GetByteSize() else b""
    raw = bytes(raw or b"").split(b"\0")[0]
    return '"%s"' % raw.decode("utf-8", "replace")


# The frames LLDB's own assert recognizer handles: the symbols below in libc.so.6 (a symbol may
# carry a version after '@'). LLDB applies only the newest recognizer that matches a frame, so
# ours is registered for every frame except these: LLDB keeps selecting the frame that called
# abort()/assert() on SIGABRT, and these frames carry no ehbt values.
_ASSERT_MODULE = "libc.so.6"
_ASSERT_SYMBOLS = ("raise", "__GI_raise", "gsignal", "pthread_kill")


def __lldb_init_module(debugger, _internal_dict):
    name = __name__
    run = debugger.HandleCommand
    run("command script add -o -c %s.EhbtCommand ehbt" % name)
    run("type summary add -w ehbt -F %s._source_summary '%s'" % (name, _SOURCE_TYPE))
    run("type category enable ehbt")
    # Importing the file again must not stack more recognizers on top of the first ones.
    state = getattr(lldb, "_ehbt_recognizer_added", set())
    if debugger.GetID() not in state:
        recognizer = "frame recognizer add -l %s.EhbtFrameRecognizer -x -f false -s '%s' -n '%s'"
        libc = "^" + support.regex_escape(_ASSERT_MODULE) + "$"
        run(recognizer % (name, support.regex_except([_ASSERT_MODULE]), ".*"))
        run(recognizer % (name, libc, support.regex_except(_ASSERT_SYMBOLS, tail="@")))
        state.add(debugger.GetID())
        lldb._ehbt_recognizer_added = state
