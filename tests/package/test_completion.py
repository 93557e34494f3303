# SPDX-License-Identifier: Apache-2.0
"""The installed bash completions: sourced into a plain bash (no bash-completion package
needed), with the installed commands first on PATH, they complete subcommands, options and
option values."""
import subprocess

import pytest

from conftest import env_without_package_path


def complete(prefix, name, words, cwd=None):
    """COMPREPLY of the completion function of `name` for the command line `words` (the last
    word being completed), in the directory `cwd` (file names are completed from there)."""
    script = prefix / "share" / "bash-completion" / "completions" / name
    assert script.exists()
    quoted = " ".join("'%s'" % w for w in words)
    program = f"""
set -e
source '{script}'
func=$(complete -p {name} | sed -E 's/.* -F ([^ ]+) .*/\\1/')
COMP_WORDS=({quoted})
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
COMP_LINE="${{COMP_WORDS[*]}}"
"$func"
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    env = env_without_package_path(PATH=f"{prefix / 'bin'}:/usr/bin:/bin")
    proc = subprocess.run(["bash", "--norc", "--noprofile", "-c", program], capture_output=True,
                          text=True, env=env, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return [w for w in proc.stdout.split("\n") if w]


@pytest.mark.parametrize("words,want", [
    (["ehbt", "co"], ["core"]),
    (["ehbt", "core", "--sy"], ["--sysroot"]),
    (["ehbt", "core", "x.core", "--all"], ["--all-threads"]),
    (["ehbt", "core", "--source", "s"], ["sframe"]),
    (["ehbt", "pid", "--max-f"], ["--max-frames"]),
    (["ehbt", "cfi", "--p"], ["--pc"]),
    (["ehbt", "sframe", "co"], ["convert"]),
    (["ehbt", "sframe", "convert", "in", "--e"], ["--elf"]),
    (["ehbt", "--ver"], ["--version"]),
])
def test_ehbt(prefix, words, want):
    assert complete(prefix, "ehbt", words) == want


def test_ehbt_lists_every_core_option(prefix):
    got = set(complete(prefix, "ehbt", ["ehbt", "core", "--"]))
    assert {"--sysroot", "--exe", "--json", "--all-threads", "--thread", "--max-frames",
            "--source", "--sframe-from-eh-frame", "--sframe-version", "--help"} <= got, got


@pytest.mark.parametrize("words,want", [
    (["ehbt-triage", "--sys"], ["--sysroot"]),
    (["ehbt-triage", "--ver"], ["--version"]),
    (["ehbt-triage", "--ti"], ["--timeout"]),
    (["ehbt-triage", "--j"], ["--jobs", "--jsonl"]),
])
def test_ehbt_triage(prefix, words, want):
    assert sorted(complete(prefix, "ehbt-triage", words)) == want


@pytest.mark.parametrize("words,want", [
    (["ehbt-triage", "rep"], ["report"]),
    (["ehbt-triage", "report", "--s"], ["--since"]),
    (["ehbt-triage", "report", "--by", "c"], ["core-time"]),
    (["ehbt-triage", "report", "--j"], []),  # a triage option, not one of report's
    (["ehbt-triage", "x.core", "rep"], []),  # only the first argument selects report
    (["ehbt-triage", "wat"], ["watch"]),
    (["ehbt-triage", "watch", "--q"], ["--queue"]),
    (["ehbt-triage", "watch", "--rep"], ["--report-interval"]),
    (["ehbt-triage", "watch", "--sch"], ["--scheduler"]),  # watch runs on a dask cluster too
])
def test_ehbt_triage_report(prefix, tmp_path, words, want):
    assert sorted(complete(prefix, "ehbt-triage", words, cwd=tmp_path)) == want


def test_ehbt_triage_report_lists_its_options(prefix):
    got = set(complete(prefix, "ehbt-triage", ["ehbt-triage", "report", "--"]))
    assert got == {"--help", "--db", "--since", "--by", "--html"}, got
