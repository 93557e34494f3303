# SPDX-License-Identifier: Apache-2.0
"""Walks with one module's file hidden from the engine (as if it were missing), for the tests
that need the fallbacks to run where a table would answer: imported by the tests, and sourced
into GDB and LLDB (test_live_regions.py), where `ehbt` is the plugin's package."""
import json
import os


def without_file(ehbt, modules, name):
    """The modules, the one whose file is called `name` replaced by one without its file."""
    out = []
    for m in modules:
        if os.path.basename(m.path) == name:
            hidden = ehbt.Module(path=m.path, start=m.start, end=m.end, bias=m.bias, file="",
                                 build_id=m.build_id, build_id_match=None)
            hidden.missing = "%s hidden by the test" % name
            m = hidden
        out.append(m)
    return out


def hidden_libc_walks(modules, regs, read, regions, out):
    """Writes to `out` (JSON) the walk from regs with libc's file hidden, through `read` with the
    mappings `regions`, and through `read` without them."""
    import ehbt

    mods = ehbt.ModuleSet(without_file(ehbt, modules, "libc.so.6"))
    walks = {"regions": len(regions or [])}
    for name, given in (("bounded", regions), ("unbounded", None)):
        bt = ehbt.Unwinder().unwind(regs, read, mods, module_files=True, regions=given)
        walks[name] = {"pcs": [f.pc for f in bt.frames], "stop": bt.stop, "detail": bt.detail}
    with open(out, "w") as f:
        json.dump(walks, f)
