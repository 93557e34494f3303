# SPDX-License-Identifier: Apache-2.0
"""ehbt for LLDB: an `ehbt` backtrace command and a frame recognizer annotating LLDB's frames.

    (lldb) command script import PREFIX/share/ehbt/lldb/ehbt_lldb.py
    (lldb) ehbt [--all] [--json] [--count N] [--sysroot DIR]... [--core FILE]
    (lldb) frame variable            # also shows ehbt_cfa, ehbt_source, ehbt_agrees

Works on live processes (`process launch`, `process attach`) and on cores
(`target create EXE -c CORE`).

Finding the `ehbt` package: EHBT_PYTHONPATH (a path list, e.g. <build>/engine/python) first;
then ../../../lib/python3/dist-packages or ../../../lib/python3.X/dist-packages relative to
this file (the installed layouts, where this file is PREFIX/share/ehbt/lldb/ehbt_lldb.py); then, for a source checkout,
../../build/engine/python (the default build directory).

What the engine is given:
- registers: frame 0 of the thread, read from LLDB's SBFrame by name and mapped to DWARF
  numbers (ehbt.regnames);
- memory: SBProcess.ReadMemory; an SBError is a fault. Where the target has no bytes inside a
  module (code a core leaves out), the module's file is read instead;
- modules: LLDB's module list with the load address LLDB gave each section (bias = a
  section's load address minus its file address). The vDSO is rebuilt from memory. For a core
  the engine also opens the core itself (with --sysroot and the sysroot of LLDB's platform) and
  adds every module it finds that LLDB has not placed: a qemu-user core has no file list, so
  LLDB may know nothing but the executable. A file both know but place differently is placed
  where the engine says, and a file whose build-id differs from the one the core records is
  replaced by the engine's record of it (reported with build_id_match false).
  The core file is the one named by --core, or else the ELF core LLDB has mapped into its own
  address space (found in /proc/self/maps and matched by thread ids);
- symbols: the engine's (what the CLI prints); where the engine has none, LLDB's ELF symbol
  (not its synthesized ___lldb_unnamed_symbol names) at the frame's lookup address (pc for
  frame 0 and for a frame a signal interrupted, pc-1 for callers);
- debug files: LLDB's target.debug-file-search-paths, searched by the engine for separate
  debug files (build-id directory, .gnu_debuglink) of a core's modules.

Output is ehbt.report's, the CLI's lines and document (docs/lldb.md, "One voice").

The recognizer: registered for every frame with a module (`frame recognizer add -x -f false`),
except those LLDB's own assert recognizer handles (raise, gsignal, pthread_kill in libc.so.6),
so that LLDB still selects the frame that called abort() on SIGABRT. For each of LLDB's frames
it returns three values, which `frame variable` lists:
  ehbt_cfa     the engine's CFA for the stack frame at that depth,
  ehbt_source  how the engine found that frame (context, eh_frame, debug_frame, sframe,
               signal, frame_pointer, scan; "none" where the engine has no frame there), of
               the type $ehbt_source_t, which its string summary is bound to,
  ehbt_agrees  whether LLDB's frame and the engine's at the same stack depth have the same pc
               and found the same caller (the same pc, or neither found one): false marks the
               frame where LLDB's unwinder and the engine part ways.
Inlined frames share the stack frame (and the values) of the function they were inlined into.
LLDB asks for frame 0's recognized values at every stop, so frame 0 costs one engine step (and
the module list, built once per set of loaded modules); the whole walk runs only when a deeper
frame is looked at, once per stop: results are cached under (process id, stop id, thread id).
Frames without a module (qemu's signal trampoline page) are not offered to recognizers.

What LLDB 16 allows: a plugin can add commands and frame recognizers, but it cannot replace
LLDB's unwinder. Recognizers can only add values to a frame LLDB already made
(get_recognized_arguments; LLDB 16 has no way for a recognizer to add, hide or move frames), so
LLDB's bt, up, finish and step-out still use LLDB's own unwinder, and where it stops early or
goes wrong the recognizer can only say so (ehbt_agrees false) and the `ehbt` command shows the
engine's frames. Newer LLDB (merged upstream in late 2025, long after LLDB 16) has scripted
frame providers (ScriptedFrameProvider: a Python class handed LLDB's own frames as
input_frames that answers get_frame_at_index, attached with SBThread.SetScriptedFrameProvider)
"to augment or replace the standard unwinding mechanism". With one, the engine's frames (and
the registers it recovered for them) could become LLDB's own stack, so that bt, frame select,
up/down, the variables of outer frames and finish would follow the engine past a frame LLDB
cannot unwind (a PAC-signed return address LLDB does not strip, a function without CFI on
s390x, a signal trampoline outside any module); ehbt_agrees would then be moot.
"""

import os
import re
import shlex
import struct
import sys

import lldb


def _add_package_path():
    here = os.path.dirname(os.path.realpath(__file__))
    candidates = [p for p in os.environ.get("EHBT_PYTHONPATH", "").split(os.pathsep) if p]
    # The installed layouts: lib/python3/dist-packages, or lib/python3.X/dist-packages where
    # Debian's python3 wants it for the prefix (/usr/local).
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
from ehbt import debugger_support, regnames, report  # noqa: E402

_MASK = (1 << 64) - 1
_INVALID = lldb.LLDB_INVALID_ADDRESS
_ET_EXEC = 2
_ET_CORE = 4
# LLDB's names where they differ from the ones regnames uses.
_ALIASES = {"x29": ("fp",), "x30": ("lr",), "sp": ("x31",), "pc": ("x32",)}
# One walk covers the whole stack of any sane program (the recognizer's walks).
_RECOGNIZER_LIMITS = {"max_frames": 1 << 16}
# ehbt_source is a char array of this length, of a type of its own ($ehbt_source_t, a typedef
# declared in the target's scratch context): its type summary (a string) applies to ehbt's
# values only, never to a char array of the user's program.
_SOURCE_LEN = 19
_SOURCE_TYPE = "$ehbt_source_t"


class _Error(Exception):
    """A user-facing error of the ehbt command (one line)."""


# ---------------------------------------------------------------------------------------------
# What LLDB knows: architecture, registers, memory, modules, symbols.


def _engine_arch(target):
    triple = target.GetTriple() or ""
    return regnames.engine_arch(triple.split("-")[0]) if triple else None


def _register(frame, name):
    for candidate in (name,) + _ALIASES.get(name, ()):
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
    for name, num in regnames.general_registers(arch).items():
        value = _register(frame, name)
        if value is not None:
            regs[num] = value
    pc = _register(frame, regnames.pc_name(arch))
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
        return debugger_support.memory_module(read, header_load,
                                              os.path.basename(path) or "[vdso]")
    image = debugger_support.cached_image(images, path)
    if image is None:
        return None
    if image.elf_type == _ET_EXEC:
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


def _mapped_cores():
    """ELF core files mapped into LLDB's own address space (LLDB maps the core it reads)."""
    paths = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                parts = line.split(None, 5)
                if len(parts) == 6 and parts[5].startswith("/"):
                    path = parts[5].rstrip("\n")
                    if path not in paths:
                        paths.append(path)
    except OSError:
        return []
    cores = []
    for path in paths:
        try:
            with open(path, "rb") as f:
                head = f.read(18)
        except OSError:
            continue
        if len(head) < 18 or head[:4] != b"\x7fELF":
            continue
        endian = ">" if head[5] == 2 else "<"
        if struct.unpack(endian + "H", head[16:18])[0] == _ET_CORE:
            cores.append(path)
    return cores


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
        self.cores = {}  # (path, sysroots, exe) -> ehbt.Target or None
        self.core_paths = {}  # frozenset of tids -> core path or None
        self.modules_key = None
        self.modules = None
        self.walks = {}  # (pid, stop id, tid) -> {"first": [...], "walk": Backtrace}
        self.walks_done = 0
        self.sysroots = ()  # the last --sysroot list given to the command (the recognizer's)
        self.core_errors = {}  # core path -> why the engine could not open it

    def core_path(self, process, explicit=None):
        if explicit:
            return explicit
        if process.GetPluginName() != "elf-core":
            return None
        tids = frozenset(t.GetThreadID() for t in process)
        if tids not in self.core_paths:
            found = None
            candidates = _mapped_cores()
            for path in candidates:
                target = self.core_target(path, (), "")
                if target is not None and {t.tid for t in target.threads} == tids:
                    found = path
                    break
            if found is None and len(candidates) == 1:
                found = candidates[0]
            self.core_paths[tids] = found
        return self.core_paths[tids]

    def core_target(self, path, sysroots, exe, debug_dirs=()):
        key = (path, tuple(sysroots), exe, tuple(debug_dirs))
        if key not in self.cores:
            try:
                self.cores[key] = ehbt.open_core(path, list(sysroots), exe,
                                                 debug_dirs=list(debug_dirs))
            except ehbt.Error as e:
                self.core_errors[path] = str(e)
                self.cores[key] = None
        return self.cores[key]

    def module_set(self, debugger, target, process, sysroots=(), core=None):
        key = (_module_signature(target), tuple(sysroots), core, _debug_dirs(debugger))
        if self.modules is not None and self.modules_key == key:
            return self.modules
        read = _memory_reader(process)
        modules = []
        for module in target.module_iter():
            m = _lldb_module(target, module, self.images, read)
            if m is not None:
                modules.append(m)
        if core:
            engine = self.engine_core(debugger, target, core, sysroots)
            if engine is not None:
                from_core = list(engine.modules)
                modules = [m for m in modules if not _differs_from_core(m, from_core)]
                modules = debugger_support.merge_modules(modules, from_core)
        elif process.GetPluginName() != "elf-core":
            modules = debugger_support.respell_live_modules(modules, process.GetProcessID())
        self.modules = ehbt.ModuleSet(modules)
        self.modules_key = key
        return self.modules

    @staticmethod
    def _sysroots(debugger, sysroots):
        roots = list(sysroots)
        platform = _platform_sysroot(debugger)
        if platform and platform not in roots:
            roots.append(platform)
        return tuple(roots)

    def engine_core(self, debugger, target, core, sysroots):
        if not core:
            return None
        return self.core_target(core, self._sysroots(debugger, sysroots),
                                target.GetExecutable().fullpath or "", _debug_dirs(debugger))


def _differs_from_core(module, from_core):
    """Whether the core records another build-id for the place LLDB loaded this file at."""
    if not module.build_id:
        return False
    for c in from_core:
        overlap = c.start < module.end and module.start < c.end
        if overlap and c.build_id and c.start == module.start and c.build_id != module.build_id:
            return True
    return False


_contexts = {}


def _context(process):
    key = process.GetUniqueID()
    if key not in _contexts:
        _contexts[key] = _Context()
    return _contexts[key]


def _unwind(debugger, target, process, thread, ctx, max_frames=0, sysroots=(), core=None,
            limits=None):
    arch = _engine_arch(target)
    if arch is None:
        raise _Error("ehbt: unsupported architecture %s" % target.GetTriple())
    regs = _thread_registers(thread, arch)
    modules = ctx.module_set(debugger, target, process, sysroots, core)
    if limits is None:
        limits = ehbt.Limits(max_frames=max_frames) if max_frames else None
    backtrace = ehbt.Unwinder(limits).unwind(regs, _memory_reader(process), modules,
                                             module_files=True)
    return arch, backtrace


# ---------------------------------------------------------------------------------------------
# Output: the CLI's lines and the ehbt-backtrace/1 document (ehbt.report).


def _symbol_fallback(target):
    """symbol_of(frame) for ehbt.report: LLDB's ELF symbol at the frame's lookup address (pc
    for frame 0 and a frame a signal interrupted, pc-1 for callers), asked only where the
    engine knows no symbol: the frame lines stay the CLI's wherever the engine names them."""

    def symbol_of(frame):
        return _symbol_from_lldb(target, frame.lookup_pc)

    return symbol_of


def _live_signal(thread):
    """(signal record or None) of the stop of a live thread: the siginfo the kernel gave it
    (a breakpoint is the SIGTRAP of its trap instruction), else the signal LLDB stopped it
    for with its code unknown, else None."""
    try:
        info = thread.GetSiginfo()
    except (AttributeError, TypeError):
        info = None
    if info is not None and info.IsValid():
        number = info.GetChildMemberWithName("si_signo").GetValueAsSigned(0)
        code = info.GetChildMemberWithName("si_code").GetValueAsSigned(0)
        address = None
        if number in debugger_support.FAULT_ADDRESS_SIGNALS:
            fault = info.GetValueForExpressionPath("._sifields._sigfault.si_addr")
            if fault.IsValid():
                address = fault.GetValueAsUnsigned(0) & _MASK
        if number:
            return report.signal_record(number, code, address)
    if thread.GetStopReason() == lldb.eStopReasonSignal:
        return report.signal_record(thread.GetStopReasonDataAtIndex(0))
    return None


def _stop_signal(process, engine_core):
    """(signal record, tid of the thread that took it) of the process's stop.

    A core: the signal and crashing thread the engine's reader of the core finds (LLDB marks
    every thread of a core with the signal). A live process: the siginfo of the thread LLDB
    selected at the stop."""
    if engine_core is not None:
        if not engine_core.threads or engine_core.signal is None:
            return None, None
        return (report.target_signal(engine_core),
                engine_core.threads[engine_core.crashing_thread].tid)
    if process.GetPluginName() == "elf-core":
        return None, None  # a core the engine could not read: LLDB's copy of its signal
    thread = process.GetSelectedThread()
    signal = _live_signal(thread) if thread.IsValid() else None
    return signal, (thread.GetThreadID() if signal is not None else None)


def _text(target, results, signal, signal_tid, all_threads):
    """The CLI's text: frame lines and stop line (ehbt.report), a thread header with --all."""
    lines = []
    symbol_of = _symbol_fallback(target)
    for thread, _arch, backtrace in results:
        if all_threads:
            tid = thread.GetThreadID()
            lines += ["", report.thread_header(tid, tid == signal_tid, signal)]
        lines += report.format_text(backtrace, symbol_of=symbol_of)
    return lines


def _document(target, process, core, engine_core, results, modules, signal, signal_tid):
    """The ehbt-backtrace/1 document, as the CLI writes it: "core" for a core, "pid" for a
    live process; the executable as the core (or the kernel) names it."""
    threads = []
    arch = results[0][1] if results else _engine_arch(target)
    symbol_of = _symbol_fallback(target)
    for thread, _arch, backtrace in results:
        tid = thread.GetThreadID()
        threads.append(report.thread_record(tid, backtrace, crashing=tid == signal_tid,
                                            symbol_of=symbol_of))
    executable = target.GetExecutable().fullpath or None
    warnings = []
    if engine_core is not None:
        executable = engine_core.executable or executable
        warnings = list(engine_core.warnings)
    live = process.GetPluginName() != "elf-core"
    if live:
        executable = debugger_support.live_executable(process.GetProcessID(), executable)
    return report.document(arch, threads, modules=modules.modules, executable=executable,
                           core=core, signal=signal,
                           pid=process.GetProcessID() if live else None, warnings=warnings)


# ---------------------------------------------------------------------------------------------
# The `ehbt` command.

_HELP = """Backtrace computed by the ehbt engine, independently of LLDB's unwinder.
ehbt %s (the version of the ehbt package this plugin loaded).

Usage: ehbt [--all] [--json] [--count N] [--sysroot DIR]... [--core FILE]
       ehbt --version

  --all, -a        every thread of the process, not just the selected one
  --json, -j       print the ehbt-backtrace/1 JSON document instead of text
  --count N, -c N  at most N frames per thread (1 to 4294967295)
  --sysroot DIR    where to find the files of a core LLDB did not load
                   (qemu-user cores name no files): DIR/<path in the core>
                   is tried first. May repeat; kept for later ehbt commands
                   and the frame recognizer. LLDB's platform sysroot is
                   also used.
  --core FILE      the core file LLDB opened (found by itself when LLDB
                   has the file mapped)

The output is the ehbt CLI's, line for line: one line per stack frame
("#3  0x000055d4... in check () from /opt/app/bin/server"; inlined calls
are no frames of their own), "<signal handler called>" for a signal
frame, "Backtrace stopped: <reason>: <detail>" when the walk did not
reach the outermost frame, and with --all a "Thread TID:" line before
each thread. Symbols are the engine's; LLDB's ELF symbol names a frame
the engine has none for. --json prints the ehbt-backtrace/1 document on
one line: "core" for a core, "pid" for a live process. Separate debug
files are looked for in target.debug-file-search-paths too.

frame variable shows ehbt_cfa, ehbt_source and ehbt_agrees for each of
LLDB's frames: the engine's CFA and unwind source at the same stack
depth, and whether LLDB's frame and caller match the engine's."""


def _parse(command):
    opts = {"all": False, "json": False, "count": 0, "sysroot": [], "core": None,
            "version": False}
    try:
        argv = shlex.split(command or "")
    except ValueError as e:
        raise _Error("ehbt: %s" % e)
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, inline = arg.partition("=")
        if name in ("--all", "-a") and not eq:
            opts["all"] = True
        elif name in ("--json", "-j") and not eq:
            opts["json"] = True
        elif name == "--version" and not eq:
            opts["version"] = True
        elif name in ("--count", "-c", "--sysroot", "--core"):
            if eq:
                value = inline
            elif i + 1 < len(argv):
                i += 1
                value = argv[i]
            else:
                value = None
            if name in ("--count", "-c"):
                try:
                    opts["count"] = debugger_support.parse_count(name, value)
                except ValueError as e:
                    raise _Error(str(e))
            elif value is None:
                raise _Error("ehbt: %s needs a value" % name)
            elif name == "--sysroot":
                if not os.path.isdir(value):
                    raise _Error("ehbt: --sysroot %s: no such directory" % value)
                opts["sysroot"].append(value)
            else:
                if not os.path.isfile(value):
                    raise _Error("ehbt: --core %s: no such file" % value)
                opts["core"] = value
        else:
            raise _Error("ehbt: unknown argument '%s' (see 'help ehbt')" % arg)
        i += 1
    return opts


class EhbtCommand:
    def __init__(self, debugger, internal_dict):
        pass

    def get_short_help(self):
        return "Backtrace computed by the ehbt engine (--all, --json, --count N, --sysroot DIR)."

    def get_long_help(self):
        return _HELP % ehbt.__version__

    def __call__(self, debugger, command, exe_ctx, result):
        # Every failure is one line: no Python traceback reaches the user.
        try:
            self._run(debugger, command, exe_ctx, result)
        except _Error as e:
            result.SetError(str(e))
        except Exception as e:  # noqa: BLE001
            result.SetError(debugger_support.one_line(e))

    def _run(self, debugger, command, exe_ctx, result):
        opts = _parse(command)
        if opts["version"]:
            result.AppendMessage("ehbt %s" % ehbt.__version__)
            return
        target = exe_ctx.GetTarget()
        process = exe_ctx.GetProcess()
        if not target.IsValid() or not process.IsValid() or process.GetNumThreads() == 0:
            raise _Error("ehbt: no process (launch, attach or load a core first)")
        if process.GetState() not in (lldb.eStateStopped, lldb.eStateCrashed,
                                      lldb.eStateSuspended):
            raise _Error("ehbt: the process is not stopped")
        selected = process.GetSelectedThread()
        if opts["all"]:
            threads = sorted(process, key=lambda t: t.GetIndexID())
        else:
            threads = [exe_ctx.GetThread() if exe_ctx.GetThread().IsValid() else selected]
        ctx = _context(process)
        if opts["sysroot"]:
            ctx.sysroots = tuple(opts["sysroot"])  # kept for later commands and the recognizer
        opts["sysroot"] = list(ctx.sysroots)
        core = ctx.core_path(process, opts["core"])
        engine_core = ctx.engine_core(debugger, target, core, opts["sysroot"])
        if opts["core"] and engine_core is None:
            raise _Error("ehbt: cannot read the core %s: %s" % (
                opts["core"], ctx.core_errors.get(opts["core"], "not an ELF core")))
        results = []
        for thread in threads:
            arch, backtrace = _unwind(debugger, target, process, thread, ctx, opts["count"],
                                      opts["sysroot"], core)
            results.append((thread, arch, backtrace))
        signal, signal_tid = _stop_signal(process, engine_core)
        if opts["json"]:
            modules = ctx.module_set(debugger, target, process, opts["sysroot"], core)
            doc = _document(target, process, core, engine_core, results, modules, signal,
                            signal_tid)
            result.AppendMessage(report.dumps(doc))
            return
        lines = _text(target, results, signal, signal_tid, opts["all"])
        result.AppendMessage("\n".join(lines).lstrip("\n"))


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
        groups, depth_of = debugger_support.physical_frames(pairs)
        if i >= index and len(groups) >= depth_of[index] + 2:
            break
        i += 1
    return debugger_support.physical_frames(pairs)


def _with_module_files(read, modules):
    """read, falling back to a module's file where the target has no bytes (as the walk's
    module_files does): a core leaves out the code of files it maps unchanged."""

    def layered(addr, size):
        try:
            return read(addr, size)
        except MemoryError:
            module = modules.find(addr)
            if module is None or module.image is None:
                raise
            data = module.image.read(module.to_link(addr), size)
            if not data:
                raise
            return data

    return layered


def _first_frame_only(debugger, target, process, thread, ctx):
    """[(pc, cfa, source)] of the engine's frame 0 and its caller, from one step."""
    arch = _engine_arch(target)
    if arch is None:
        return []
    regs = _thread_registers(thread, arch)
    core = ctx.core_path(process)
    modules = ctx.module_set(debugger, target, process, ctx.sysroots, core)
    unwinder = ehbt.Unwinder()
    first = unwinder.first_frame(regs, modules)
    read = _with_module_files(_memory_reader(process), modules)
    step = unwinder.step(first, read, modules)
    out = [(first.pc, step.cfa if step.ok else first.cfa, first.source)]
    if step.ok:
        out.append((step.caller.pc, None, step.caller.source))
    return out


def _engine_walk(debugger, target, process, thread, ctx):
    """[(pc, cfa, source)] of the engine's whole walk of the thread."""
    core = ctx.core_path(process)
    _arch, backtrace = _unwind(debugger, target, process, thread, ctx, sysroots=ctx.sysroots,
                               core=core, limits=ehbt.Limits(**_RECOGNIZER_LIMITS))
    ctx.walks_done += 1
    return [(f.pc, f.cfa, f.source) for f in backtrace.frames]


def _annotation(frame):
    """(cfa, source, agrees) of the stack frame an LLDB frame belongs to."""
    thread = frame.GetThread()
    process = thread.GetProcess()
    target = process.GetTarget()
    debugger = target.GetDebugger()
    ctx = _context(process)
    key = (process.GetProcessID(), process.GetStopID(), thread.GetThreadID())
    if key not in ctx.walks:
        # Only the entries of the current stop are kept.
        ctx.walks = {k: v for k, v in ctx.walks.items() if k[:2] == key[:2]}
        ctx.walks[key] = {}
    cache = ctx.walks[key]
    index = frame.GetFrameID()
    lldb_pcs, depth_of = _lldb_stack(thread, index)
    if index >= len(depth_of):
        return None
    depth = depth_of[index]
    if depth == 0 and "walk" not in cache:
        if "first" not in cache:
            cache["first"] = _first_frame_only(debugger, target, process, thread, ctx)
        engine = cache["first"]
    else:
        if "walk" not in cache:
            cache["walk"] = _engine_walk(debugger, target, process, thread, ctx)
        engine = cache["walk"]
    engine_pcs = [pc for pc, _cfa, _source in engine]
    agrees = debugger_support.agreement(engine_pcs, lldb_pcs, depth)
    if depth < len(engine):
        _pc, cfa, source = engine[depth]
        return (cfa or 0), source, agrees
    return 0, "none", agrees


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
_REGEX_SPECIAL = set(".[]()*+?{}|^$\\")


def _regex_except(words, tail=None):
    """A POSIX extended regex matching every string except the given words (each also when
    followed by `tail` and anything after it). Built from the words' trie: a string leaves
    the language where it ends inside the trie or takes a character no word continues with."""
    trie = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[None] = {}  # a word ends here

    def escape(ch):
        return "\\" + ch if ch in _REGEX_SPECIAL else ch

    def suffixes(node):
        ends = None in node
        children = sorted(ch for ch in node if ch is not None)
        stop = children + ([tail] if ends and tail else [])
        alternatives = ["[^%s].*" % "".join(stop) if stop else ".+"]
        alternatives += [escape(ch) + suffixes(node[ch]) for ch in children]
        group = "(" + "|".join(alternatives) + ")"
        return group if ends else group + "?"  # ending inside a word is not a word

    return "^" + suffixes(trie) + "$"


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
        libc = "^" + "".join("\\" + c if c in _REGEX_SPECIAL else c for c in _ASSERT_MODULE) + "$"
        run(recognizer % (name, _regex_except([_ASSERT_MODULE]), ".*"))
        run(recognizer % (name, libc, _regex_except(_ASSERT_SYMBOLS, tail="@")))
        state.add(debugger.GetID())
        lldb._ehbt_recognizer_added = state
