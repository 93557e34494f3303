# SPDX-License-Identifier: Apache-2.0
"""ehbt for GDB: an `ehbt` backtrace command and an unwinder GDB itself can use.

    (gdb) source PREFIX/share/ehbt/gdb/ehbt.py
    (gdb) ehbt [-all] [-json] [-full] [-n N] [-compare]
    (gdb) enable unwinder global ehbt        # bt/frame/up/finish now use the engine
    (gdb) disable unwinder global ehbt

Finding the `ehbt` package: EHBT_PYTHONPATH (a path list, e.g. <build>/engine/python) first;
then ../../../lib/python3/dist-packages or ../../../lib/python3.X/dist-packages relative to
this file (the installed layouts, where this file is PREFIX/share/ehbt/gdb/ehbt.py); then, for a source checkout,
../../build/engine/python (the default build directory).

What the engine is given:
- registers: frame 0 of the selected thread, read from GDB by name and mapped to DWARF numbers;
- memory: `gdb.selected_inferior().read_memory` (a gdb.MemoryError is a fault), and where
  GDB has no bytes inside a module, that module's file. For a core file, the engine reads the
  core itself (the same file GDB opened): GDB reads zeros for code a core leaves out when it
  could not relocate the file it came from;
- modules: the files GDB has loaded, from `info files`, which lists every section of the
  executable and of each shared library at its runtime address. Each file is opened with
  the engine's Image.open, and its load bias is the runtime address GDB shows for one of
  .eh_frame/.eh_frame_hdr/.dynamic minus that section's link-time address in the file
  (ET_EXEC files: bias 0). The vDSO ("system-supplied DSO at ADDR") is rebuilt from memory.
  For a core file the engine also opens the core itself (open_core, with GDB's sysroot) and
  adds every module it discovers that GDB does not cover, so cores whose producer wrote no
  file list (qemu-user) still get their shared libraries; a file both know but place
  differently is placed where the engine says (GDB may have left a PIE unrelocated).

Output is ehbt.report's: the CLI's frame, signal-frame, stop and thread lines, and its
ehbt-backtrace/1 document on one line (docs/gdb.md, "One voice"). Separate debug files are
looked for in GDB's debug-file-directory.

The unwinder (registered disabled) walks the whole stack once per stop in C++ and answers
GDB frame by frame from a (pc, sp) table: the caller's pc, every register the engine
recovered, and every other general register carried unchanged (GDB's DWARF unwinder's rule
for a register without one), so variables never show less than without it. It declines
frames the engine could not step past, and signal trampolines inside a known file (GDB's own
sigtramp unwinder shows them as "<signal handler called>"), and frames of functions GDB has
debug info for whose caller the engine found from CFI: GDB's DWARF unwinder applies the same
rows there and adds what only it can, tail-call frames and entry values from DW_TAG_call_site
debug info.
"""

import os
import re
import sys

import gdb
import gdb.unwinder


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
_ET_EXEC = 2
# Sections whose runtime address GDB shows and whose link address the engine knows.
_BIAS_SECTIONS = (".eh_frame", ".eh_frame_hdr", ".dynamic")
_VDSO_PREFIX = "system-supplied DSO at "


# ---------------------------------------------------------------------------------------------
# What GDB knows: architecture, registers, memory, loaded files.


def _engine_arch(frame):
    return regnames.engine_arch(frame.architecture().name())


def _read_registers(frame, arch):
    """RegisterSet of a frame (gdb.Frame or gdb.PendingFrame) from its general registers.

    Also returns {name: gdb.Type} for the registers read, used to build saved-register values
    of the right size in the unwinder."""
    regs = ehbt.RegisterSet(arch)
    types = {}
    for name, num in regnames.general_registers(arch).items():
        try:
            value = frame.read_register(name)
        except (gdb.error, ValueError):
            continue
        types[name] = value.type
        try:
            regs[num] = int(value) & _MASK
        except gdb.error:  # <unavailable> / <not saved>
            continue
    pc_name = regnames.pc_name(arch)
    value = frame.read_register(pc_name)
    types[pc_name] = value.type
    regs.pc = int(value) & _MASK
    return regs, types


def _memory_reader(inferior):
    """read(addr, size) -> bytes for the engine; faults come back as exceptions it absorbs."""
    read_memory = inferior.read_memory

    def read(addr, size):
        return read_memory(addr, size)

    return read


def _parse_info_files(text):
    """(core path or None, exec path or None, {path: {section: runtime start}})."""
    core = exec_file = None
    files = {}
    block = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("Local core dump file:"):
            block = "core"
            continue
        if line.startswith("Local exec file:"):
            block = "exec"
            continue
        if line.startswith("`") and "'" in line[1:]:
            path = line[1:line.index("'", 1)]
            if block == "core":
                core = path
            elif block == "exec":
                exec_file = path
            continue
        if not line.startswith("0x") or " is " not in line:
            continue
        addr_part, _, rest = line.partition(" is ")
        try:
            start = int(addr_part.split(" - ")[0], 16)
        except ValueError:
            continue
        section, sep, owner = rest.partition(" in ")
        if not sep:
            if block != "exec" or exec_file is None:
                continue  # a core segment ("load1"), not a file's section
            owner = exec_file
        files.setdefault(owner, {}).setdefault(section.strip(), start)
    return core, exec_file, files


def _module_for_file(path, sections, images, read):
    """An ehbt.Module for a file GDB loaded, or None when the engine cannot open it."""
    if path.startswith(_VDSO_PREFIX):
        try:
            load = int(path[len(_VDSO_PREFIX):], 16)
        except ValueError:
            return None
        return debugger_support.memory_module(read, load, "[vdso]")
    image = debugger_support.cached_image(images, path)
    if image is None:
        return None
    bias = 0
    if image.elf_type != _ET_EXEC:
        link = image.sections
        for name in _BIAS_SECTIONS:
            if name in link and name in sections:
                bias = (sections[name] - link[name][0]) & _MASK
                break
        else:
            return None  # no section to place it by: better no module than a wrong one
    return ehbt.Module(image, path=path, bias=bias)


def _debug_dirs():
    """GDB's debug-file-directory (colon-separated): where the engine looks for separate
    debug files first, as GDB does."""
    try:
        dirs = gdb.parameter("debug-file-directory") or ""
    except gdb.error:
        return []
    return [d for d in dirs.split(":") if d]


def _sysroots():
    try:
        root = gdb.parameter("sysroot") or ""
    except gdb.error:
        return []
    if root.startswith("target:"):
        root = root[len("target:"):]
    return [root] if root else []


class _Modules:
    """The ModuleSet of the current program, rebuilt only when GDB's file list changes."""

    def __init__(self):
        self._images = {}  # path -> ehbt.Image, kept across rebuilds
        self._cores = {}  # core path -> ehbt.Target (engine's own module discovery)
        self._key = None
        self._set = None
        self.core = None

    def invalidate(self, *_args):
        self._key = None
        self._set = None

    def core_target(self, core):
        if core not in self._cores:
            try:
                exe = gdb.current_progspace().filename or ""
                self._cores[core] = ehbt.open_core(core, _sysroots(), exe,
                                                   debug_dirs=_debug_dirs())
            except (ehbt.Error, gdb.error):
                self._cores[core] = None
        return self._cores[core]

    def get(self, inferior):
        key = (inferior.num, inferior.pid)
        if self._set is not None and self._key == key:
            return self._set
        text = gdb.execute("info files", to_string=True)
        core, _exe, files = _parse_info_files(text)
        self.core = core
        read = _memory_reader(inferior)
        modules = []
        for path, sections in files.items():
            module = _module_for_file(path, sections, self._images, read)
            if module is not None:
                modules.append(module)
        if core:
            target = self.core_target(core)
            if target is not None:
                modules = debugger_support.merge_modules(modules, list(target.modules))
        elif inferior.pid:
            modules = debugger_support.respell_live_modules(modules, inferior.pid)
        self._set = ehbt.ModuleSet(modules)
        self._key = key
        return self._set

    def memory(self, inferior):
        """What the engine reads target memory through: for a core file, the engine's own
        reader of it (it places the files the core leaves out where the core says they were;
        GDB reads zeros there when it could not relocate a file); otherwise GDB."""
        self.get(inferior)
        target = self.core_target(self.core) if self.core else None
        return target if target is not None else _memory_reader(inferior)


_modules = _Modules()


# ---------------------------------------------------------------------------------------------
# The `ehbt` command.


def _thread_tid(thread):
    pid, lwp, tid = thread.ptid
    return lwp or tid or pid


def _stop_signal_without_siginfo():
    """The signal GDB says the program stopped with ("It stopped with signal SIGSEGV, ..." in
    `info program`), for a target that gives no siginfo (qemu-user's gdbstub): number only,
    code and address unknown (null), as for a core without NT_SIGINFO."""
    try:
        text = gdb.execute("info program", to_string=True)
    except gdb.error:
        return None
    m = re.search(r"stopped with signal (SIG[A-Z0-9]+)", text)
    if not m:
        return None
    for number in range(1, 65):
        if ehbt.signal_name(number) == m.group(1):
            return report.signal_record(number)
    return None


def _signal_of_selected_thread():
    try:
        info = gdb.parse_and_eval("$_siginfo")
        number = int(info["si_signo"])
        code = int(info["si_code"])
    except (gdb.error, RuntimeError, ValueError):
        return _stop_signal_without_siginfo()
    address = None
    if number in debugger_support.FAULT_ADDRESS_SIGNALS:
        try:
            address = int(info["_sifields"]["_sigfault"]["si_addr"]) & _MASK
        except (gdb.error, RuntimeError, ValueError):
            address = None
    return report.signal_record(number, code, address)


def _core_thread_registers(thread):
    """(arch, RegisterSet) of a core's thread from the engine's own core reader, or None."""
    core = _modules.core
    target = _modules.core_target(core) if core else None
    if target is None:
        return None
    tid = _thread_tid(thread)
    threads = target.threads
    match = [t for t in threads if t.tid == tid] or (threads[:1] if len(threads) == 1 else [])
    if not match:
        return None
    return str(target.arch), match[0].regs


def _selected_thread_registers():
    """(arch, RegisterSet) of frame 0 of the selected thread.

    From GDB's frame 0 normally; from the engine's core reader when GDB cannot make frame 0
    (a qemu-user core of a PIE GDB did not relocate: "PC not saved")."""
    inferior = gdb.selected_inferior()
    _modules.get(inferior)  # also learns whether a core file is loaded
    try:
        frame = gdb.newest_frame()
        arch = _engine_arch(frame)
        if arch is None:
            raise gdb.GdbError("ehbt: unsupported architecture " + frame.architecture().name())
        return arch, _read_registers(frame, arch)[0]
    except gdb.error as e:
        found = _core_thread_registers(gdb.selected_thread())
        if found is None:
            raise gdb.GdbError("ehbt: no registers for this thread (%s)" % e)
        return found


def _unwind_selected_thread(max_frames):
    arch, regs = _selected_thread_registers()
    inferior = gdb.selected_inferior()
    modules = _modules.get(inferior)
    limits = ehbt.Limits(max_frames=max_frames) if max_frames else None
    return arch, ehbt.Unwinder(limits).unwind(regs, _modules.memory(inferior), modules,
                                              module_files=True)


def _gdb_frames(limit):
    """GDB's own frames of the selected thread: [(pc, function name)]. Frames GDB makes up
    from debug info (inlined calls, tail calls) have no stack frame of their own: left out."""
    out = []
    frame = gdb.newest_frame()
    while frame is not None and len(out) < limit:
        if frame.type() not in (gdb.INLINE_FRAME, gdb.TAILCALL_FRAME):
            name = frame.name()
            if frame.function() is None or name is None:
                block_name = gdb.current_progspace().solib_name(frame.pc())
                name = name or ("??" + (" from " + block_name if block_name else ""))
            out.append((frame.pc(), name))
        try:
            frame = frame.older()
        except gdb.error:
            break
    return out


def _compare_lines(backtrace, limit):
    theirs = _gdb_frames(limit)
    ours = []
    for frame in backtrace.frames[:limit]:
        sym = frame.symbolize()
        ours.append((frame.pc, sym[0] if sym else "??"))
    arch = backtrace.frames[0].regs.arch if backtrace.frames else "x86_64"
    lines = ["%-4s %-48s %s" % ("#", "gdb", "ehbt")]
    first_diff = None
    for i in range(max(len(theirs), len(ours))):
        g = theirs[i] if i < len(theirs) else None
        e = ours[i] if i < len(ours) else None
        # GDB's bt stops at main ("set backtrace past-main"): frames only ehbt has past
        # GDB's last one are listed, not counted as a disagreement.
        same = e is not None and (g is None or g[0] == e[0])
        mark = ""
        if not same and first_diff is None:
            first_diff = i
            mark = "  <-- first difference"
        left = "%s %s" % (report.padded_address(g[0], arch), g[1]) if g else "-"
        right = "%s %s" % (report.padded_address(e[0], arch), e[1]) if e else "-"
        lines.append("%-4d %-48s %s%s" % (i, left, right, mark))
    if first_diff is None:
        lines.append("GDB and ehbt agree on all %d frames GDB shows." % len(theirs))
    else:
        lines.append("GDB and ehbt agree on the first %d frames." % first_diff)
    end = report.stop_line(backtrace)
    if end:
        lines.append("ehbt: " + end)
    return lines


class EhbtCommand(gdb.Command):
    """Backtrace of the selected thread, computed by the ehbt engine from .eh_frame.

Usage: ehbt [-all] [-json] [-full] [-n N] [-compare]
       ehbt -version

  -all       every thread of the inferior, not just the selected one
  -json      print the ehbt-backtrace/1 JSON document instead of text
  -full      add each frame's CFA, how it was unwound, and its recovered registers
  -n N       at most N frames per thread
  -compare   GDB's own frames beside the engine's; the first disagreement is marked
  -version   the version of the ehbt package this plugin loaded

The text looks like GDB's bt and ends with "Backtrace stopped: <reason>" when the walk
stopped before the outermost frame. See also: enable unwinder global ehbt."""

    OPTIONS = ("-all", "-json", "-full", "-n", "-compare", "-version")

    def __init__(self):
        super().__init__("ehbt", gdb.COMMAND_STACK)

    def complete(self, text, word):
        # GDB may break the word after the dash ("-a" -> "a"): complete the whole token and
        # hand back only the part that replaces `word`.
        token = "" if not text or text[-1].isspace() else text.split()[-1]
        word = word or ""
        cut = len(token) - len(word)
        return [o[cut:] for o in self.OPTIONS if o.startswith(token)]

    @staticmethod
    def _parse(arg):
        opts = {"all": False, "json": False, "full": False, "n": 0, "compare": False,
                "version": False}
        try:
            argv = gdb.string_to_argv(arg)
        except (gdb.error, ValueError) as e:
            raise gdb.GdbError(debugger_support.one_line(e))
        i = 0
        while i < len(argv):
            a = argv[i]
            if a == "-n":
                try:
                    opts["n"] = debugger_support.parse_count(
                        "-n", argv[i + 1] if i + 1 < len(argv) else None)
                except ValueError as e:
                    raise gdb.GdbError(str(e))
                i += 2
                continue
            if a.startswith("-") and a[1:] in opts and a != "-n":
                opts[a[1:]] = True
            else:
                raise gdb.GdbError("ehbt: unknown argument '%s' (see 'help ehbt')" % a)
            i += 1
        return opts

    def invoke(self, arg, from_tty):
        # Every failure is one line: GDB prints a GdbError's message alone, without the
        # Python traceback any other exception would bring.
        try:
            self._invoke(arg)
        except (gdb.GdbError, KeyboardInterrupt):
            raise
        except Exception as e:  # noqa: BLE001  (no traceback reaches the user)
            raise gdb.GdbError(debugger_support.one_line(e))

    def _invoke(self, arg):
        opts = self._parse(arg)
        if opts["version"]:
            gdb.write("ehbt %s\n" % ehbt.__version__)
            return
        if not gdb.selected_inferior().pid and not gdb.selected_inferior().threads():
            raise gdb.GdbError("ehbt: no process and no core file")
        selected_thread = gdb.selected_thread()
        if selected_thread is None:
            raise gdb.GdbError("ehbt: no thread selected")
        try:
            selected_frame = gdb.selected_frame()
        except gdb.error:
            selected_frame = None  # GDB cannot make frame 0; the engine may still
        # The signal of the stop: the thread GDB selected when the program stopped took it.
        signal, signal_tid = _stop_signal(selected_thread)
        threads = [selected_thread]
        if opts["all"]:
            threads = sorted(gdb.selected_inferior().threads(), key=lambda t: t.num)
        results = []
        try:
            for thread in threads:
                thread.switch()
                arch, backtrace = _unwind_selected_thread(opts["n"])
                compare = _compare_lines(backtrace, opts["n"] or 2048) if opts["compare"] else None
                results.append((thread, arch, backtrace, compare))
        finally:
            selected_thread.switch()
            try:
                if selected_frame is not None:
                    selected_frame.select()
            except gdb.error:
                pass
        if opts["json"]:
            gdb.write(report.dumps(self._document(results, signal, signal_tid)) + "\n")
            return
        regnames_ = None
        out = []
        for thread, arch, backtrace, compare in results:
            if opts["all"]:
                tid = _thread_tid(thread)
                out += ["", report.thread_header(tid, tid == signal_tid, signal)]
            if opts["full"]:
                regnames_ = regnames.dwarf_names(arch)
            out += compare if compare is not None else report.format_text(
                backtrace, full=opts["full"], regnames=regnames_)
        gdb.write("\n".join(out) + "\n")

    @staticmethod
    def _document(results, signal, signal_tid):
        inferior = gdb.selected_inferior()
        modules = _modules.get(inferior)
        core = _modules.core
        target = _modules.core_target(core) if core else None
        threads = []
        arch = results[0][1] if results else "x86_64"
        for thread, _arch, backtrace, _cmp in results:
            tid = _thread_tid(thread)
            threads.append(report.thread_record(tid, backtrace, crashing=tid == signal_tid))
        if target is not None:
            executable = target.executable or gdb.current_progspace().filename
            warnings = list(target.warnings)
        else:
            executable = gdb.current_progspace().filename
            if inferior.pid and not core:
                executable = debugger_support.live_executable(inferior.pid, executable)
            warnings = []
        return report.document(
            arch, threads, modules=modules.modules, executable=executable or None, core=core,
            signal=signal, pid=None if core else inferior.pid, warnings=warnings)


def _stop_signal(thread):
    """(signal record, tid of the thread that took it) of the program's stop, or (None, None).

    A core: the signal the core records (NT_SIGINFO) and its crashing thread, from the
    engine's own reader (GDB marks every thread of a core with the signal). A live process:
    the siginfo the kernel gave the thread GDB selected at the stop (a breakpoint is the
    SIGTRAP of its trap instruction, as the kernel reports it)."""
    _modules.get(gdb.selected_inferior())
    core = _modules.core
    if core:
        target = _modules.core_target(core)
        if target is None or not target.threads or target.signal is None:
            return None, None
        return report.target_signal(target), target.threads[target.crashing_thread].tid
    current = gdb.selected_thread()
    try:
        thread.switch()
        signal = _signal_of_selected_thread()
    finally:
        if current is not None:
            current.switch()
    return signal, (_thread_tid(thread) if signal is not None else None)


# ---------------------------------------------------------------------------------------------
# The unwinder.


class _FrameId:
    """What GDB identifies a frame by: its CFA and its function's start."""

    def __init__(self, sp, pc):
        self.sp = sp
        self.pc = pc


# Where the engine found a caller from the same unwind tables GDB's DWARF unwinder reads.
_CFI_SOURCES = ("eh_frame", "debug_frame")


def _has_debug_info(pc):
    """Whether GDB has line/debug information for the function at pc."""
    try:
        return gdb.find_pc_line(pc).symtab is not None
    except (gdb.error, RuntimeError):
        return False


class EhbtUnwinder(gdb.unwinder.Unwinder):
    """Unwinds GDB's frames with the engine.

    The first frame GDB asks about after a stop triggers one walk of the whole stack in C++,
    from that frame's registers; every frame of the walk is stored under (pc, sp). Each later
    call is a dict lookup. Frames the engine could not step past are declined (None), so
    GDB's own unwinders take over there; a frame the cache does not know (one GDB unwound
    itself) starts a new walk from its registers."""

    def __init__(self):
        super().__init__("ehbt")
        self.cache = {}
        self.walks = 0
        self._types = {}
        # One walk covers the whole stack of any sane program; a deeper one is resumed
        # from the last frame computed, when GDB asks for it.
        self._unwinder = ehbt.Unwinder(ehbt.Limits(max_frames=1 << 16))

    def invalidate(self, *_args):
        self.cache.clear()

    def __call__(self, pending_frame):
        try:
            return self._unwind(pending_frame)
        except Exception:  # noqa: BLE001  (never break GDB's frame machinery, no traceback)
            return None

    def _walk(self, pending_frame, arch):
        regs, types = _read_registers(pending_frame, arch)
        inferior = gdb.selected_inferior()
        modules = _modules.get(inferior)
        backtrace = self._unwinder.unwind(regs, _modules.memory(inferior), modules,
                                          module_files=True)
        self.walks += 1
        names = regnames.dwarf_names(arch)
        pc_name, sp_name = regnames.pc_name(arch), regnames.sp_name(arch)
        sp_num = regnames.general_registers(arch)[sp_name]
        frames = backtrace.frames
        for i, frame in enumerate(frames):
            key = (frame.pc, frame.regs.get(sp_num))
            if key in self.cache and self.cache[key] is not None:
                continue
            if frame.signal_trampoline and frame.module is not None:
                # A trampoline in a file GDB knows (libc's __restore_rt, the vDSO's
                # __kernel_rt_sigreturn): GDB's own sigtramp unwinder makes it a
                # SIGTRAMP_FRAME ("<signal handler called>") and then looks up the
                # interrupted frame's pc as is. One outside any file (qemu-user's trampoline
                # page) GDB cannot recognise: the engine's frame is used.
                self.cache[key] = None
                continue
            if i + 1 >= len(frames):
                if backtrace.stop != "max_frames":
                    self.cache[key] = None  # the walk ends here: GDB's unwinders decide
                continue
            caller = frames[i + 1]
            if caller.source in _CFI_SOURCES and _has_debug_info(frame.lookup_pc):
                # GDB's own DWARF unwinder applies the same CFI rows here, and only it adds
                # what the function's debug info knows beyond them: the tail-call frames
                # between it and its caller, and the entry values of its parameters
                # (no_tid@entry=0) found at the call site. Leave such frames to GDB.
                self.cache[key] = None
                continue
            sym = frame.symbolize()
            saved = [(pc_name, caller.pc)]
            saved += [(names[n], v) for n, v in caller.regs.items() if n in names]
            # GDB's s390 finds a caller's pc through its pseudo register "pc" (pswa with the
            # addressing-mode bit masked), which an unwinder must supply by that name.
            saved += [(alias, caller.pc) for alias in regnames.pc_pseudo_names(arch)]
            self.cache[key] = (frame.cfa, sym[1] if sym else frame.pc, saved)
        return types

    def _unwind(self, pending_frame):
        arch = _engine_arch(pending_frame)
        if arch is None:
            return None
        pc = int(pending_frame.read_register(regnames.pc_name(arch))) & _MASK
        sp = int(pending_frame.read_register(regnames.sp_name(arch))) & _MASK
        key = (pc, sp)
        row = self.cache.get(key, False)
        if row is False:
            self._types = self._walk(pending_frame, arch)
            row = self.cache.setdefault(key, None)
        if row is None:
            return None
        cfa, func, saved = row
        info = pending_frame.create_unwind_info(_FrameId(gdb.Value(cfa), gdb.Value(func)))
        value = gdb.Value
        supplied = set()
        for name, v in saved:
            # A 64-bit integer value has every register's size here; cast only if GDB
            # insists on the register's own type.
            try:
                info.add_saved_register(name, value(v))
            except ValueError:
                info.add_saved_register(name, value(v).cast(self._types[name]))
            supplied.add(name)
        self._carry_unchanged(pending_frame, info, supplied, arch)
        return info

    def _carry_unchanged(self, pending_frame, info, supplied, arch):
        """Every general register the walk did not determine is the caller's unchanged, as
        GDB's own DWARF unwinder takes a register without a CFI rule (same value). GDB reads a
        register a Python unwinder leaves out as <optimized out>: without this, arguments
        kept in registers, and entry values computed from them, would show less with this
        unwinder than without it. Only the general registers (ehbt.regnames): carrying GDB's
        other raw and pseudo registers (s390x floating-point, vector, pswm, cc) made GDB 13
        stop unwinding on s390x."""
        for name in regnames.general_registers(arch):
            if name in supplied:
                continue
            try:
                value = pending_frame.read_register(name)
                # A register GDB's unwinder of the frame below left undefined (s390x's
                # call-clobbered r0-r5) stays so: carrying its <not saved> made GDB fail later
                # ("register has not been saved in frame" in info frame).
                if value.is_optimized_out:
                    continue
                value.fetch_lazy()
                info.add_saved_register(name, value)
            except (gdb.error, ValueError):
                continue  # <unavailable> here


def _install():
    # Sourcing the file again replaces the command, the unwinder and the event hooks.
    state = getattr(gdb, "_ehbt_plugin_state", None)
    if state is not None:
        for registry, handler in state["hooks"]:
            try:
                registry.disconnect(handler)
            except (ValueError, RuntimeError):
                pass
    # `help ehbt` names the version: GDB reads the class docstring when the command is made.
    EhbtCommand.__doc__ = EhbtCommand.__doc__.replace(
        "\n\nUsage:", "\nehbt %s.\n\nUsage:" % ehbt.__version__, 1)
    EhbtCommand()
    unwinder = EhbtUnwinder()
    gdb.unwinder.register_unwinder(None, unwinder, replace=True)
    unwinder.enabled = False  # nothing changes until `enable unwinder global ehbt`

    hooks = []
    events = gdb.events
    for name in ("stop", "cont", "inferior_call", "memory_changed", "register_changed",
                 "exited"):
        registry = getattr(events, name, None)
        if registry is not None:
            registry.connect(unwinder.invalidate)
            hooks.append((registry, unwinder.invalidate))
    for name in ("new_objfile", "clear_objfiles", "new_inferior", "exited"):
        registry = getattr(events, name, None)
        if registry is not None:
            for handler in (unwinder.invalidate, _modules.invalidate):
                registry.connect(handler)
                hooks.append((registry, handler))
    gdb._ehbt_plugin_state = {"hooks": hooks, "unwinder": unwinder, "modules": _modules}


_install()
