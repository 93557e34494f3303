# SPDX-License-Identifier: Apache-2.0
"""ehbt for GDB: an `ehbt` backtrace command and an unwinder GDB itself can use.

    (gdb) source PREFIX/share/ehbt/gdb/ehbt.py
    (gdb) ehbt [--all-threads|-all] [--json|-json] [--max-frames|-n N] ...   (help ehbt)
    (gdb) enable unwinder global ehbt        # bt/frame/up/finish now use the engine

This file only talks to GDB: the command's options, policy and output are ehbt.frontend's,
shared with the LLDB plugin (docs/gdb.md). The package is found through EHBT_PYTHONPATH, then
PREFIX/lib/python3[.X]/dist-packages relative to this file, then build/engine/python.

The engine is given frame 0's registers (read by name), memory through GDB or, for a core,
its own reader of the core (GDB reads zeros for code a core leaves out when it could not
relocate the file), and the files GDB loaded, placed by the runtime addresses `info files`
shows for their sections, plus every module the engine finds in the core itself; JIT code
and its perf map from the engine's reading of a core, or, for a live process on this machine,
from its /proc/PID/maps and /tmp/perf-PID.map (or --perf-map) at each stop, as `ehbt pid`.

The unwinder (registered disabled) walks the whole stack once per stop and answers GDB frame
by frame from a (pc, sp) table: the caller's pc, every register the engine recovered, every
other general register unchanged. It claims the walk's last frame with itself as its caller,
so that GDB stops there too (GDB 13's Python API cannot say "outermost"; GDB sees a repeated
frame) instead of guessing on. It declines signal trampolines in a known file (GDB shows
"<signal handler called>") and frames GDB has debug info for whose caller the engine found
from CFI (GDB adds tail-call frames and entry values there).
"""

import os
import sys

import gdb
import gdb.unwinder


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
_NO_OPTIONS = frontend.parse("", "gdb")


def _engine_arch(frame):
    return frontend.engine_arch(frame.architecture().name())


def _read_registers(frame, arch):
    """(RegisterSet, {name: gdb.Type}) of a gdb.Frame or gdb.PendingFrame."""
    regs, types = ehbt.RegisterSet(arch), {}
    names, pc_name, _sp_name = ehbt.general_registers(arch)
    for name, num in list(names.items()) + [(pc_name, None)]:
        try:
            value = frame.read_register(name)
            types[name] = value.type
            if num is None:
                regs.pc = int(value) & _MASK
            else:
                regs[num] = int(value) & _MASK
        except (gdb.error, ValueError):  # no such register, <unavailable>, <not saved>
            if num is None:
                raise
    return regs, types


def _memory_reader(inferior):
    return lambda addr, size: inferior.read_memory(addr, size)


def _gdb_list(parameter, sep=":"):
    try:
        text = gdb.parameter(parameter) or ""
    except gdb.error:
        return []
    return [p[len("target:"):] if p.startswith("target:") else p for p in text.split(sep) if p]


class _Modules:
    """The files GDB loaded and the engine's reader of the core, rebuilt when GDB's file list
    changes (invalidate) or the command names other files."""

    def __init__(self):
        self._images, self._sets, self.cores = {}, {}, support.EngineCores()
        self._files_key = self._files = self.core = None
        self._stops = 0  # a live process's JIT code is read again after each stop

    def invalidate(self, *_args):
        self._files_key, self._sets = None, {}

    def stopped(self, *_args):
        self._stops += 1

    def _gdb_files(self, inferior):
        if self._files_key != (inferior.num, inferior.pid):
            text = gdb.execute("info files", to_string=True)
            self.core, _exe, self._files = support.parse_gdb_info_files(text)
            self._files_key, self._sets = (inferior.num, inferior.pid), {}
        return self._files

    def core_path(self, inferior, opts=_NO_OPTIONS):
        self._gdb_files(inferior)
        return opts["core"] or self.core

    def engine_core(self, inferior, opts=_NO_OPTIONS):
        """The engine's ehbt.Target of the core GDB (or --core) names, or None."""
        core = self.core_path(inferior, opts)
        if not core:
            return None
        return self.cores.get(core, opts["sysroot"] + _gdb_list("sysroot"),
                              opts["exe"] or gdb.current_progspace().filename,
                              opts["debug_dir"] + _gdb_list("debug-file-directory"),
                              opts["perf_map"])

    def _local_live(self, inferior, opts):
        """Whether GDB runs a live process on this machine (its /proc/PID files are ours)."""
        if not inferior.pid or self.core_path(inferior, opts):
            return False
        connection = getattr(inferior, "connection", None)
        return connection is None or connection.type == "native"

    def get(self, inferior, opts=_NO_OPTIONS):
        """The ModuleSet of the walks: GDB's files (with the core's), and the JIT code of the
        engine's core target or, live on this machine, of the process as it is at this stop
        (read again after every stop: a JIT maps and names code while the process runs)."""
        return self._entry(inferior, opts)[0]

    def live_warnings(self, inferior, opts=_NO_OPTIONS):
        """What reading a live process's JIT code said (an unreadable --perf-map)."""
        return self._entry(inferior, opts)[2]

    def _entry(self, inferior, opts):
        files = self._gdb_files(inferior)
        target = self.engine_core(inferior, opts)
        live = target is None and self._local_live(inferior, opts)
        key = (id(target), (self._stops, opts["perf_map"]) if live else None)
        if key not in self._sets:
            read = _memory_reader(inferior)
            modules = [m for m in (support.module_from_sections(p, s, self._images, read)
                                   for p, s in files.items()) if m is not None]
            if target is not None:
                modules = support.merge_modules(modules, list(target.modules))
            elif inferior.pid and not self.core_path(inferior, opts):
                modules = support.respell_live_modules(modules, inferior.pid)
            warnings = []
            if live:  # one stop's set at a time
                self._sets = {k: v for k, v in self._sets.items() if k[1] is None}
            self._sets[key] = (support.module_set(modules, target,
                                                  inferior.pid if live else None,
                                                  opts["perf_map"], warnings),
                               target, warnings)
        return self._sets[key]

    def memory(self, inferior, opts=_NO_OPTIONS):
        target = self.engine_core(inferior, opts)
        return target if target is not None else _memory_reader(inferior)

    def regions(self, inferior, opts=_NO_OPTIONS):
        """The mappings that bound a walk through GDB's memory (Unwinder.unwind's `regions`):
        a live process's, from its /proc/PID/maps when GDB runs it on this machine; None for
        a core (the engine's target knows its own segments) and for a remote target."""
        if not self._local_live(inferior, opts):
            return None
        return support.live_regions(inferior.pid)


_modules = _Modules()


# ---------------------------------------------------------------------------------------------
# The `ehbt` command.


def _thread_tid(thread):
    pid, lwp, tid = thread.ptid
    return lwp or tid or pid


def _live_signal():
    """The siginfo of the selected thread's stop (a breakpoint is its trap's SIGTRAP), else
    the signal `info program` names (qemu's gdbstub gives no siginfo), else None."""
    try:
        info = gdb.parse_and_eval("$_siginfo")
        number, code = int(info["si_signo"]), int(info["si_code"])
    except (gdb.error, RuntimeError, ValueError):
        try:
            text = gdb.execute("info program", to_string=True)
        except gdb.error:
            return None
        names = [n for n in range(1, 65)
                 if "stopped with signal %s," % ehbt.signal_name(n) in text]
        return frontend.stop_signal(names[0]) if names else None
    address = None
    if frontend.carries_fault_address(number):
        try:
            address = int(info["_sifields"]["_sigfault"]["si_addr"]) & _MASK
        except (gdb.error, RuntimeError, ValueError):
            pass
    sender = None
    if code <= 0:  # sent by a process: _kill holds its pid and uid (the report decides)
        try:
            kill = info["_sifields"]["_kill"]
            sender = (int(kill["si_pid"]), int(kill["si_uid"]))
        except (gdb.error, RuntimeError, ValueError):
            pass
    return frontend.stop_signal(number, code, address, sender)


def _thread_registers(opts):
    """(arch, RegisterSet) of frame 0 of the selected thread: from GDB, or from the engine's
    core reader where GDB cannot make frame 0 (a qemu-user core of an unrelocated PIE)."""
    try:
        frame = gdb.newest_frame()
        arch = _engine_arch(frame)
        if arch is None:
            raise gdb.GdbError("ehbt: unsupported architecture " + frame.architecture().name())
        return arch, _read_registers(frame, arch)[0]
    except gdb.error as e:
        target = _modules.engine_core(gdb.selected_inferior(), opts)
        threads = list(target.threads) if target is not None else []
        tid = _thread_tid(gdb.selected_thread())
        match = [t for t in threads if t.tid == tid] or threads[:1] * (len(threads) == 1)
        if not match:
            raise gdb.GdbError("ehbt: no registers for this thread (%s)" % e)
        return str(target.arch), match[0].regs


def _gdb_frames(limit):
    """GDB's own frames [(pc, name)] of the selected thread, without the ones it makes up
    from debug info (inlined and tail calls: no stack frame of their own)."""
    out, frame = [], gdb.newest_frame()
    while frame is not None and len(out) < limit:
        if frame.type() not in (gdb.INLINE_FRAME, gdb.TAILCALL_FRAME):
            name = frame.name()
            if frame.function() is None or name is None:
                lib = gdb.current_progspace().solib_name(frame.pc())
                name = name or ("??" + (" from " + lib if lib else ""))
            out.append((frame.pc(), name))
        try:
            frame = frame.older()
        except gdb.error:
            break
    return out


class EhbtCommand(gdb.Command):
    """Backtrace of the selected thread, computed by the ehbt engine from .eh_frame."""

    def __init__(self):
        super().__init__("ehbt", gdb.COMMAND_STACK)

    def complete(self, text, word):
        # GDB may break the word after the dash ("-a" -> "a"): complete the whole token and
        # hand back only the part that replaces `word`.
        token = "" if not text or text[-1].isspace() else text.split()[-1]
        cut = len(token) - len(word or "")
        return [o[cut:] for o in frontend.forms("gdb") if o.startswith(token)]

    def invoke(self, arg, from_tty):
        # Every failure is one line: GDB prints a GdbError's message alone.
        try:
            self._invoke(frontend.parse(arg, "gdb"))
        except (gdb.GdbError, KeyboardInterrupt):
            raise
        except Exception as e:  # noqa: BLE001  (no traceback reaches the user)
            raise gdb.GdbError(support.one_line(e))

    def _invoke(self, opts):
        if opts["version"]:
            gdb.write("ehbt %s\n" % ehbt.__version__)
            return
        inferior = gdb.selected_inferior()
        selected = gdb.selected_thread()
        if selected is None or not (inferior.pid or inferior.threads()):
            raise gdb.GdbError("ehbt: no process and no core file")
        engine_core = _modules.engine_core(inferior, opts)
        core = _modules.core_path(inferior, opts)
        if opts["core"] and engine_core is None:
            raise gdb.GdbError("ehbt: cannot read the core %s: %s" % (
                opts["core"], _modules.cores.errors.get(opts["core"], "not an ELF core")))
        # The stop's signal: a core's own record; live, the selected thread took it.
        if core:
            signal, signal_tid = frontend.core_signal(engine_core)
        else:
            signal = _live_signal()
            signal_tid = _thread_tid(selected) if signal is not None else None
        threads = frontend.pick_threads(opts, sorted(inferior.threads(), key=lambda t: t.num),
                                        selected, _thread_tid)
        try:
            selected_frame = gdb.selected_frame()
        except gdb.error:
            selected_frame = None  # GDB cannot make frame 0; the engine may still
        results = []
        regions = _modules.regions(inferior, opts)
        try:
            for thread in threads:
                thread.switch()
                arch, regs = _thread_registers(opts)
                backtrace = ehbt.Unwinder(frontend.limits(opts)).unwind(
                    regs, _modules.memory(inferior, opts), _modules.get(inferior, opts),
                    options=frontend.unwind_options(opts), module_files=True, regions=regions)
                host = _gdb_frames(opts["max_frames"] or 2048) if opts["compare"] else None
                results.append((_thread_tid(thread), arch, backtrace, host))
        finally:
            selected.switch()
            try:
                if selected_frame is not None:
                    selected_frame.select()
            except gdb.error:
                pass
        if not opts["json"]:
            gdb.write(frontend.text(results, opts, signal, signal_tid, host="GDB") + "\n")
            return
        pid = None if core else inferior.pid
        exe, warnings = frontend.executable_and_warnings(
            opts["exe"] or gdb.current_progspace().filename, engine_core, pid,
            _modules.live_warnings(inferior, opts))
        gdb.write(frontend.document(
            results, _modules.get(inferior, opts), exe or None, core=core, pid=pid,
            warnings=warnings, signal=signal, signal_tid=signal_tid,
            input_format=engine_core.input_format if engine_core else None,
            lines=not opts["no_lines"], debug_cache=not opts.get("no_debug_cache")) + "\n")


# ---------------------------------------------------------------------------------------------
# The unwinder.


class _FrameId:
    """What GDB identifies a frame by: its CFA and its function's start."""

    def __init__(self, sp, pc):
        self.sp, self.pc = sp, pc


# Where the engine found a caller from the same unwind tables GDB's DWARF unwinder reads.
_CFI_SOURCES = ("eh_frame", "debug_frame")


def _has_debug_info(pc):
    try:
        return gdb.find_pc_line(pc).symtab is not None
    except (gdb.error, RuntimeError):
        return False


class EhbtUnwinder(gdb.unwinder.Unwinder):
    """Unwinds GDB's frames with the engine: the first frame GDB asks about after a stop
    starts one walk of the whole stack, stored under (pc, sp); later calls are lookups. A
    frame the table does not know (one GDB unwound itself) starts a new walk."""

    def __init__(self):
        super().__init__("ehbt")
        self.cache, self.walks, self._types = {}, 0, {}
        # One walk covers any sane stack; a deeper one resumes where GDB asks next.
        self._unwinder = ehbt.Unwinder(ehbt.Limits(max_frames=1 << 16))

    def invalidate(self, *_args):
        self.cache.clear()

    def __call__(self, pending_frame):
        try:
            return self._unwind(pending_frame)
        except Exception:  # noqa: BLE001  (never break GDB's frame machinery)
            return None

    def _walk(self, pending_frame, arch):
        regs, types = _read_registers(pending_frame, arch)
        inferior = gdb.selected_inferior()
        backtrace = self._unwinder.unwind(regs, _modules.memory(inferior),
                                          _modules.get(inferior), module_files=True,
                                          regions=_modules.regions(inferior))
        self.walks += 1
        numbers, pc_name, sp_name = ehbt.general_registers(arch)
        names = {num: name for name, num in numbers.items()}
        sp_num = numbers[sp_name]
        # GDB's s390 finds a caller's pc through its pseudo register "pc" too.
        pc_names = (pc_name,) + ehbt.register_aliases(arch, pc_name)
        frames = backtrace.frames
        for i, frame in enumerate(frames):
            key = (frame.pc, frame.regs.get(sp_num))
            if self.cache.get(key) is not None:
                continue
            last = i + 1 >= len(frames)
            if frame.signal_trampoline and frame.module is not None:
                # GDB's own sigtramp unwinder recognises a trampoline in a file it knows;
                # one outside any file (qemu-user's page) it cannot: the engine's is used.
                self.cache[key] = None
                continue
            if last and backtrace.stop == "max_frames":
                continue  # GDB asks for it next: a new walk starts there
            caller = frame if last else frames[i + 1]
            if not last and caller.source in _CFI_SOURCES and _has_debug_info(frame.lookup_pc):
                # GDB's DWARF unwinder applies the same rows and adds what only debug info
                # knows: tail-call frames, entry values (no_tid@entry=0). Leave it to GDB.
                self.cache[key] = None
                continue
            sym = frame.symbolize()
            saved = [(pc_names[0], caller.pc)]
            saved += [(names[n], v) for n, v in caller.regs.items() if n in names]
            saved += [(alias, caller.pc) for alias in pc_names[1:]]
            self.cache[key] = (frame.cfa, sym[1] if sym else frame.pc, saved)
        return types

    def _unwind(self, pending_frame):
        arch = _engine_arch(pending_frame)
        if arch is None:
            return None
        _names, pc_name, sp_name = ehbt.general_registers(arch)
        key = tuple(int(pending_frame.read_register(n)) & _MASK for n in (pc_name, sp_name))
        row = self.cache.get(key, False)
        if row is False:
            self._types = self._walk(pending_frame, arch)
            row = self.cache.setdefault(key, None)
        if row is None:
            return None
        cfa, func, saved = row
        info = pending_frame.create_unwind_info(_FrameId(gdb.Value(cfa), gdb.Value(func)))
        supplied = set()
        for name, v in saved:
            # A 64-bit integer has every register's size here; cast only if GDB insists.
            try:
                info.add_saved_register(name, gdb.Value(v))
            except ValueError:
                info.add_saved_register(name, gdb.Value(v).cast(self._types[name]))
            supplied.add(name)
        # Every other general register is the caller's unchanged (GDB's DWARF unwinder's
        # rule without CFI); left out, GDB would show it <optimized out>. Only the general
        # ones: carrying s390x's fp/vector/pswm registers made GDB 13 stop unwinding there.
        for name in ehbt.general_registers(arch)[0]:
            if name in supplied:
                continue
            try:
                value = pending_frame.read_register(name)
                # Left undefined by GDB's unwinder of the frame below (s390x's r0-r5): kept
                # so ("register has not been saved in frame" in info frame otherwise).
                if not value.is_optimized_out:
                    value.fetch_lazy()
                    info.add_saved_register(name, value)
            except (gdb.error, ValueError):
                continue  # <unavailable> here
        return info


def _install():
    # Sourcing the file again replaces the command, the unwinder and the event hooks.
    state = getattr(gdb, "_ehbt_plugin_state", None)
    for registry, handler in state["hooks"] if state else ():
        try:
            registry.disconnect(handler)
        except (ValueError, RuntimeError):
            pass
    # `help ehbt`: GDB reads the class docstring when the command is made.
    EhbtCommand.__doc__ = "%s\nehbt %s.\n\n%s\n\nSee also: enable unwinder global ehbt." % (
        EhbtCommand.__doc__.splitlines()[0], ehbt.__version__, frontend.help_text("gdb"))
    EhbtCommand()
    unwinder = EhbtUnwinder()
    gdb.unwinder.register_unwinder(None, unwinder, replace=True)
    unwinder.enabled = False  # nothing changes until `enable unwinder global ehbt`
    hooks = []
    events = gdb.events
    for name, handlers in (
            ("stop", [unwinder.invalidate, _modules.stopped]), ("cont", [unwinder.invalidate]),
            ("inferior_call", [unwinder.invalidate, _modules.stopped]),
            ("memory_changed", [unwinder.invalidate]),
            ("register_changed", [unwinder.invalidate]),
            ("exited", [unwinder.invalidate, _modules.invalidate]),
            ("new_objfile", [unwinder.invalidate, _modules.invalidate]),
            ("clear_objfiles", [unwinder.invalidate, _modules.invalidate]),
            ("new_inferior", [unwinder.invalidate, _modules.invalidate])):
        registry = getattr(events, name, None)
        for handler in handlers if registry is not None else ():
            registry.connect(handler)
            hooks.append((registry, handler))
    gdb._ehbt_plugin_state = {"hooks": hooks, "unwinder": unwinder, "modules": _modules}


_install()
