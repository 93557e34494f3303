# SPDX-License-Identifier: Apache-2.0
"""Which files the debugger plugins use is the engine's decision, made once in the Python
package (ehbt.debugger_support.merge_modules, which both plugins call), not in each plugin
(issue #32, item 8): a file a debugger loaded whose build-id is not the one the core records
is not used, wherever the debugger placed it; a debugger's file kept reports build_id_match
against what the core records (None where it records no build-id), as the CLI does. The
plugins' own tests (test_gdb_plugin.py, test_lldb_plugin.py) check the same through GDB and
LLDB on fixture cores; here the rule itself, on modules made by hand."""
import pytest

import ehbt_py as h

A, B = "aa" * 20, "bb" * 20


@pytest.fixture(scope="module")
def ehbt(build_dir):
    return h.import_ehbt(build_dir)  # skips when the Python module is not built


def test_a_file_the_core_records_another_build_id_for_is_not_used(ehbt):
    from ehbt import debugger_support as support
    core = ehbt.Module(path="/usr/lib/libfoo.so", start=0x1000, end=0x3000, file="",
                       build_id=B, build_id_match=False)
    core.missing = "libfoo.so (named by the core) is another build"
    # Placed over the core's mapping, or left at its link address (GDB does that with a main
    # executable that does not match the core), or a little off: never used.
    for start in (0x1000, 0x1800, 0):
        loaded = ehbt.Module(path="/rebuilt/libfoo.so", start=start, end=start + 0x2000,
                             file="/rebuilt/libfoo.so", build_id=A)
        merged = support.merge_modules([loaded], [core])
        assert [m.build_id for m in merged] == [B], (start, merged)
        assert merged[0].build_id_match is False


def test_two_files_of_one_name_both_recorded_are_kept(ehbt):
    from ehbt import debugger_support as support
    # dlmopen: two libfoo.so builds mapped at once; the core records both build-ids.
    core = [ehbt.Module(path="/a/libfoo.so", start=0x1000, end=0x2000, file="", build_id=A),
            ehbt.Module(path="/b/libfoo.so", start=0x5000, end=0x6000, file="", build_id=B)]
    loaded = ehbt.Module(path="/a/libfoo.so", start=0x1000, end=0x2000, file="/a/libfoo.so",
                         build_id=A)
    merged = support.merge_modules([loaded], core)
    assert loaded in merged and len(merged) == 2, merged


def test_a_kept_file_reports_the_cores_build_id_match(ehbt):
    from ehbt import debugger_support as support
    for recorded, want in (("", None), (A, True)):
        core = ehbt.Module(path="/work/chain", start=0x1000, end=0x2000, file="",
                           build_id=recorded, build_id_match=None)
        core.missing = "chain not found (named by the core)"
        loaded = ehbt.Module(path="/elsewhere/chain", start=0x1000, end=0x2000,
                             file="/elsewhere/chain", build_id=A)  # build_id_match: True
        merged = support.merge_modules([loaded], [core])
        assert merged == [loaded], merged
        assert loaded.build_id_match is want, (recorded, loaded.build_id_match)
        assert loaded.path == "/work/chain"
