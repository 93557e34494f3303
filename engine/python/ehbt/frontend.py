# SPDX-License-Identifier: Apache-2.0
"""The `ehbt` command of the debugger plugins, host-neutral: its options (one table), their
parser and help text, and the policy both plugins share (which threads to print, the limits,
the signal of a core, the text and the document). Pure Python, no gdb or lldb import: each
plugin (plugins/gdb/ehbt.py, plugins/lldb/ehbt_lldb.py) only says what its host knows.

The long options are the CLI's (`ehbt core --help`), accepted by both plugins; each host
adds the short spellings its users type: GDB's single-dash words (-all, -json, -n N), LLDB's
letters (-a, -j, -c N) and its older long names (--all, --count)."""

import os
import shlex

from . import _ehbt

# The largest frame count the engine takes (Limits.max_frames is 32 bits).
COUNT_MAX = (1 << 32) - 1
SOURCES = ("auto", "eh_frame", "sframe", "frame_pointer")
HOSTS = ("gdb", "lldb")


class UsageError(Exception):
    """A bad argument of the ehbt command: one line, starting with "ehbt: "."""


class Option:
    """One option: its key in the parsed dict, the CLI's long name, the value it takes
    (metavar, or None for a flag), each host's other spellings, and one help line."""

    def __init__(self, key, name, metavar=None, gdb=(), lldb=(), repeat=False, check=None,
                 text=""):
        self.key, self.name, self.metavar = key, name, metavar
        self.aliases = {"gdb": tuple(gdb), "lldb": tuple(lldb)}
        self.repeat, self.check, self.text = repeat, check, text

    def spellings(self, host):
        return (self.name,) + self.aliases[host]


# The one table. Help lines are at most 60 characters after the option column.
OPTIONS = (
    Option("all_threads", "--all-threads", gdb=("-all",), lldb=("--all", "-a"),
           text="every thread, not just the selected one"),
    Option("thread", "--thread", "TID",
           text="only the thread whose kernel thread id is TID"),
    Option("max_frames", "--max-frames", "N", gdb=("-n",), lldb=("--count", "-c"),
           text="at most N frames per thread (1 to %d)" % COUNT_MAX),
    Option("json", "--json", gdb=("-json",), lldb=("-j",),
           text="the ehbt-backtrace/1 JSON document, on one line"),
    Option("full", "--full", gdb=("-full",),
           text="each frame's CFA, how it was found, its registers"),
    Option("compare", "--compare", gdb=("-compare",),
           text="the debugger's own frames beside the engine's"),
    Option("no_lines", "--no-lines", gdb=("-no-lines",),
           text="no source lines or inlined calls (reads no debug info)"),
    Option("no_debug_cache", "--no-debug-cache", gdb=("-no-debug-cache",),
           text="compressed debug files read without the cache"),
    Option("source", "--source", "S",
           text="auto (default), eh_frame, sframe or frame_pointer"),
    Option("sysroot", "--sysroot", "DIR", repeat=True, check="dir",
           text="look up the files a core names in DIR first"),
    Option("debug_dir", "--debug-dir", "DIR", repeat=True, check="dir",
           text="look for separate debug files in DIR first"),
    Option("exe", "--exe", "PATH", check="file",
           text="the main executable of the core"),
    Option("core", "--core", "FILE", check="file",
           text="the core file the debugger opened"),
    Option("perf_map", "--perf-map", "FILE", gdb=("-perf-map",), check="perf_map",
           text="name JIT code from FILE (default: /tmp/perf-PID.map)"),
    Option("version", "--version", gdb=("-version",),
           text="the version of the ehbt package loaded"),
)

_EXTRA_HELP = """
--sysroot and --debug-dir may repeat; the debugger's own sysroot and
debug-file directories are searched after them. --sysroot, --debug-dir,
--exe and --core name the files the engine reads a core with; --core is
needed only when the plugin cannot find the debugger's core by itself.
Executable memory no file backs is JIT code ("[jit]"), named from the
--perf-map FILE, else for a live process on this machine from
/tmp/perf-PID.map, for a core from /tmp/perf-PID.map inside a --sysroot
(PID: the core's process), as `ehbt pid` and `ehbt core` name it.

The text is the `ehbt core` CLI's, line for line: one line per stack
frame ("#3  0x000055d4... in check () from /opt/app/bin/server"),
"<signal handler called>" for a signal frame, "Backtrace stopped:
<reason>: <detail>" when the walk did not reach the outermost frame, and
with --all-threads a "Thread TID:" line before each thread. Where debug
info exists a frame shows "at FILE:LINE" instead of "from MODULE", and
the calls inlined at its pc come first as frames of their own, numbered
as GDB numbers them (Go code: from .gopclntab, no DWARF needed);
--no-lines reads no debug info for that."""


def forms(host):
    """Every spelling the host's command accepts (for completion)."""
    return [s for o in OPTIONS for s in o.spellings(host)]


def long_names():
    """The CLI-style long names of the table (what every help and doc lists)."""
    return [o.name for o in OPTIONS]


def option_lines(host):
    """One host's option list, from the table (docs/gdb.md and docs/lldb.md hold it too)."""
    lines = []
    for o in OPTIONS:
        spelled = ", ".join(s + (" " + o.metavar if o.metavar else "")
                            for s in o.spellings(host))
        if len(spelled) > 21:
            lines += ["  " + spelled, "  %-21s %s" % ("", o.text)]
        else:
            lines.append("  %-21s %s" % (spelled, o.text))
    return lines


def help_text(host):
    """The option part of `help ehbt` for one host."""
    return "\n".join(["Usage: ehbt [OPTION]...", ""] + option_lines(host)) + "\n" + _EXTRA_HELP


def _count(spelled, text):
    expects = "ehbt: %s expects a number between 1 and %d" % (spelled, COUNT_MAX)
    if text is None:
        raise UsageError(expects)
    try:
        value = int(text, 0)
    except ValueError:
        raise UsageError("%s, not '%s'" % (expects, text)) from None
    if not 1 <= value <= COUNT_MAX:
        raise UsageError("%s, not %s" % (expects, text))
    return value


def _value(option, spelled, text):
    if option.key == "max_frames":
        return _count(spelled, text)
    if text is None:
        raise UsageError("ehbt: %s needs a value" % spelled)
    if option.key == "thread":
        try:
            return int(text, 0)
        except ValueError:
            raise UsageError("ehbt: %s expects a thread id, not '%s'" % (spelled, text)) from None
    if option.key == "source" and text not in SOURCES:
        raise UsageError("ehbt: %s expects %s or %s, not '%s'" % (
            spelled, ", ".join(SOURCES[:-1]), SOURCES[-1], text))
    if option.check == "dir" and not os.path.isdir(text):
        raise UsageError("ehbt: %s %s: no such directory" % (spelled, text))
    if option.check == "file" and not os.path.isfile(text):
        raise UsageError("ehbt: %s %s: no such file" % (spelled, text))
    # As the CLI: a perf map not written yet is only a warning (the engine's), one that
    # exists and is no regular file (a FIFO) a mistake.
    if option.check == "perf_map" and os.path.exists(text) and not os.path.isfile(text):
        raise UsageError("ehbt: %s %s: not a regular file" % (spelled, text))
    return text


def parse(command, host):
    """The options of one `ehbt` command line: {key: value} for every key of the table
    (False / None / [] when absent). Raises UsageError (one line) on a bad argument."""
    try:
        argv = shlex.split(command or "")
    except ValueError as e:
        raise UsageError("ehbt: %s" % e) from None
    by_form = {s: o for o in OPTIONS for s in o.spellings(host)}
    opts = {o.key: ([] if o.repeat else None if o.metavar else False) for o in OPTIONS}
    i = 0
    while i < len(argv):
        spelled, eq, inline = argv[i].partition("=")
        option = by_form.get(spelled)
        if option is None or (eq and option.metavar is None):
            raise UsageError("ehbt: unknown argument '%s' (see 'help ehbt')" % argv[i])
        if option.metavar is None:
            opts[option.key] = True
        else:
            if not eq:
                i += 1
                inline = argv[i] if i < len(argv) else None
            value = _value(option, spelled, inline)
            if option.repeat:
                opts[option.key].append(value)
            else:
                opts[option.key] = value
        i += 1
    if opts["all_threads"] and opts["thread"] is not None:
        raise UsageError("ehbt: --all-threads and --thread exclude each other")
    return opts


# ---------------------------------------------------------------------------------------------
# Policy both plugins share.


def limits(opts):
    """The engine's Limits for the command (None: the defaults)."""
    return _ehbt.Limits(max_frames=opts["max_frames"]) if opts["max_frames"] else None


def unwind_options(opts):
    return {"source": opts["source"]} if opts["source"] else None


def pick_threads(opts, threads, selected, tid_of):
    """The threads to print: all (sorted as the host numbers them), the one --thread names,
    or the selected one."""
    if opts["all_threads"]:
        return list(threads)
    if opts["thread"] is not None:
        found = [t for t in threads if tid_of(t) == opts["thread"]]
        if not found:
            raise UsageError("ehbt: no thread %d in this process" % opts["thread"])
        return found
    return [selected]


def engine_arch(debugger_name):
    """The engine's name of a debugger's architecture ("i386:x86-64" -> "x86_64", an LLDB
    triple's first part "arm64" -> "aarch64"; ehbt.Arch.from_name), or None."""
    try:
        return str(_ehbt.Arch.from_name(str(debugger_name)))
    except ValueError:
        return None


def stop_signal(number, code=None, address=None, sender=None):
    """The signal of a stop as the commands pass it on: (number, code or None, fault address
    or None, sender (pid, uid) or None), or None when there was no signal (number 0 or None).
    The report layer keeps an address only for faults and a sender only for sent signals."""
    if not number:
        return None
    return (int(number), None if code is None else int(code),
            None if address is None else int(address),
            None if sender is None else (int(sender[0]), int(sender[1])))


def carries_fault_address(number):
    """Whether the siginfo of signal `number` holds a fault address (si_addr) worth reading."""
    return _ehbt.signal_has_fault_address(int(number))


def core_signal(target):
    """(signal, tid of the crashing thread) a core records, from the engine's reader of it
    (debuggers mark every thread of a core with the signal), or (None, None)."""
    if target is None or not target.threads or target.signal is None:
        return None, None
    sig = target.signal
    sender = (sig.sender.pid, sig.sender.uid) if sig.sender is not None else None
    return (stop_signal(sig.number, sig.code, sig.address, sender),
            target.threads[target.crashing_thread].tid)


def executable_and_warnings(host_exe, engine_core=None, live_pid=None, live_warnings=()):
    """The executable as the CLI names it (the core's record of it, or the kernel's for a
    live process) and the engine's warnings about the core: for a core, a function giving
    them, called once the report's frames are named and given lines, because a separate
    debug file is looked up (and fetched from debuginfod) only when a frame first needs it,
    and what that lookup says lands in the core's warnings then (as in the CLI's report).
    A live process's are `live_warnings` (what reading its JIT code said: an unreadable
    --perf-map)."""
    if engine_core is not None:
        return engine_core.executable or host_exe, lambda: list(engine_core.warnings)
    if live_pid:
        from .debugger_support import live_executable

        return live_executable(live_pid, host_exe), list(live_warnings)
    return host_exe, []


# ---------------------------------------------------------------------------------------------
# Output: the plugins print what ehbt.Report renders (the engine's report layer, the CLI's).
# A result is (tid, arch, backtrace, host_frames or None); host_frames is the debugger's own
# [(pc, name)] for --compare.


def report(results, signal=None, signal_tid=None, arch=None, modules=None, executable=None,
           core=None, pid=None, warnings=(), symbol_of=None, input_format=None,
           lines=True, debug_cache=True):
    """The ehbt.Report of the command: its threads in the order given, the one that took the
    signal marked crashing. A live process is named by its pid, a core by its path. lines:
    each frame's source position and inlined calls from debug info (False: --no-lines);
    debug_cache False: compressed debug files read as they are (--no-debug-cache)."""
    limits = None if debug_cache else _ehbt.Limits(max_debug_cache_bytes=0)
    arch = results[0][1] if results else arch
    rep = _ehbt.Report(arch, core=None if pid else core, pid=pid or None, executable=executable,
                       input_format=None if pid else input_format)
    if signal is not None:
        number, code, address, sender = signal
        rep.set_signal(number, code, address, sender_pid=sender[0] if sender else None,
                       sender_uid=sender[1] if sender else None)
    if modules is not None:
        rep.set_modules(modules)
    early = list(warnings() if callable(warnings) else warnings)
    for w in early:
        rep.add_warning(w)
    for tid, _arch, backtrace, _host in results:
        rep.add_thread(int(tid), backtrace, crashing=tid == signal_tid, symbol_of=symbol_of,
                       lines=lines, limits=limits)
    if callable(warnings):
        # Naming the frames and giving them lines may have looked up debug files: what those
        # lookups said joins the target's warnings, before the threads' own, as in the CLI.
        for i, w in enumerate(warnings()[len(early):]):
            rep.add_warning(w, at=len(early) + i)
    return rep


def text(results, opts, signal, signal_tid, host="GDB", symbol_of=None):
    """The command's text: the CLI's thread blocks without its header block (a thread's
    header line only with --all-threads), or the comparison with the debugger's own frames
    (--compare)."""
    rep = report(results, signal, signal_tid, symbol_of=symbol_of,
                 lines=not opts["no_lines"], debug_cache=not opts.get("no_debug_cache"))
    out = []
    for thread, (_tid, arch, _bt, host_frames) in zip(rep.threads, results):
        if host_frames is None:
            out.append(thread.text(header=opts["all_threads"], full=opts["full"]))
            continue
        lines = compare_lines(thread, host_frames, arch, host, opts["max_frames"])
        block = "\n".join(lines) + "\n"
        if opts["all_threads"]:
            block = "\n" + thread.header() + "\n" + block
        out.append(block)
    return "".join(out).strip("\n")


def document(results, modules, executable, core=None, pid=None, warnings=(), signal=None,
             signal_tid=None, arch=None, symbol_of=None, input_format=None, lines=True,
             debug_cache=True):
    """The ehbt-backtrace/1 document on one line (the CLI indents it), without its newline.
    `modules`: the ModuleSet (or list of Module) the walks were given. lines: False for
    --no-lines; debug_cache: False for --no-debug-cache."""
    rep = report(results, signal, signal_tid, arch, modules, executable, core, pid, warnings,
                 symbol_of, input_format, lines, debug_cache)
    return rep.json(compact=True).rstrip("\n")


def compare_lines(thread, theirs, arch, host="GDB", limit=0):
    """The debugger's frames [(pc, name)] beside the engine's (`thread`, an ehbt.ReportThread),
    the first difference marked. Debuggers stop at main by default: frames only the engine has
    past the debugger's last one are listed, not counted as a disagreement."""
    frames = thread.frames
    limit = limit or len(frames)
    theirs = theirs[:limit]
    ours = [(f.pc, f.symbol or "??") for f in frames[:limit]]
    lines = ["%-4s %-48s %s" % ("#", host.lower(), "ehbt")]
    first_diff = None
    for i in range(max(len(theirs), len(ours))):
        g = theirs[i] if i < len(theirs) else None
        e = ours[i] if i < len(ours) else None
        same = e is not None and (g is None or g[0] == e[0])
        mark = ""
        if not same and first_diff is None:
            first_diff = i
            mark = "  <-- first difference"
        left = "%s %s" % (_ehbt.padded_address(g[0], arch), g[1]) if g else "-"
        right = "%s %s" % (_ehbt.padded_address(e[0], arch), e[1]) if e else "-"
        lines.append("%-4d %-48s %s%s" % (i, left, right, mark))
    if first_diff is None:
        lines.append("%s and ehbt agree on all %d frames %s shows." % (host, len(theirs), host))
    else:
        lines.append("%s and ehbt agree on the first %d frames." % (host, first_diff))
    end = thread.stop_line()
    if end:
        lines.append("ehbt: " + end)
    return lines


if __name__ == "__main__":  # python3 -m ehbt.frontend gdb|lldb: the docs' option block
    import sys

    print("\n".join(option_lines(sys.argv[1] if len(sys.argv) > 1 else "gdb")))
