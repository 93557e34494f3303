# SPDX-License-Identifier: Apache-2.0
"""ehbt-triage beyond one machine (issue #17), against the real components started here as a
user would start them (scale_services.py): a dask scheduler with two dask-worker processes,
and a PostgreSQL server run by an unprivileged user. Also the spool reader (special files,
dangling symlinks, unreadable files; a gzip copy of a core counted once) and `report --since`."""

import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import time

import pytest

import scale_services as svc
from test_triage import (TRIAGE, by_core, core_dir, cores, crashy, read_jsonl,  # noqa: F401
                         tool_env, triage)

# ---------------------------------------------------------------------------------------------
# The servers


@pytest.fixture(scope="module")
def user():
    return svc.unprivileged_user()


@pytest.fixture(scope="module")
def postgres(user, request):
    pg = svc.Postgres(user)
    request.addfinalizer(pg.stop)
    return pg.start()


@pytest.fixture(scope="module")
def cluster(tool_env, request):
    # The workers import ehbt_triage and ehbt, as README tells users to arrange.
    env = dict(tool_env, PYTHONPATH=os.pathsep.join([str(TRIAGE.parent),
                                                     tool_env["PYTHONPATH"]]))
    c = svc.DaskCluster(env, workers=2)
    request.addfinalizer(c.stop)
    return c.start()


def _jsonl_by_core(path):
    return by_core(read_jsonl(path))


@pytest.fixture(scope="module")
def local_run(tool_env, core_dir, tmp_path_factory):
    """The local mode's verdict on every fixture core: {name: record}."""
    work = tmp_path_factory.mktemp("local")
    proc = triage(tool_env, "--db", work / "db", "--jsonl", work / "o.jsonl", "-j", "2",
                  core_dir)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return _jsonl_by_core(work / "o.jsonl")


def _pg_counts(url):
    """(cores, ok cores, {signature: count column}, {signature: ok cores counted from rows},
    cores without their threads)."""
    import psycopg

    with psycopg.connect(url) as c:
        n = c.execute("SELECT COUNT(*) FROM cores").fetchone()[0]
        ok = c.execute("SELECT COUNT(*) FROM cores WHERE status = 'ok'").fetchone()[0]
        column = dict(c.execute("SELECT signature, count FROM buckets").fetchall())
        rows = dict(c.execute("SELECT b.signature, COUNT(c.id) FROM buckets b LEFT JOIN cores c "
                              "ON c.bucket_id = b.id AND c.status = 'ok' "
                              "GROUP BY b.signature").fetchall())
        bare = c.execute("SELECT COUNT(*) FROM cores c WHERE status = 'ok' AND NOT EXISTS "
                         "(SELECT 1 FROM threads t WHERE t.core_id = c.id)").fetchone()[0]
    return n, ok, column, rows, bare


def _ok_cores(url):
    """Stored ok cores, 0 before the run has made the schema."""
    import psycopg

    try:
        return _pg_counts(url)[1]
    except psycopg.errors.UndefinedTable:
        return 0


def _signature_counts(records):
    counts = {}
    for r in records.values():
        counts[r["signature"]] = counts.get(r["signature"], 0) + 1
    return counts


# ---------------------------------------------------------------------------------------------
# dask.distributed


def test_dask_run_buckets_like_the_local_mode(tool_env, cluster, core_dir, local_run, tmp_path):
    proc = triage(tool_env, "--scheduler", cluster.address, "--db", tmp_path / "db", "--jsonl",
                  tmp_path / "o.jsonl", "--html", tmp_path / "r.html", core_dir)
    assert proc.returncode == 0, proc.stdout + proc.stderr + cluster.log_text()
    assert "analysed on dask cluster %s (2 workers" % cluster.address in proc.stdout
    recs = _jsonl_by_core(tmp_path / "o.jsonl")
    assert sorted(recs) == sorted(local_run)
    for name, r in recs.items():
        assert r["status"] == "ok", (name, r)
        assert r["signature"] == local_run[name]["signature"], name
    # The bucket table is the local mode's: same signatures, same counts.
    con = sqlite3.connect(tmp_path / "db")
    assert dict(con.execute("SELECT signature, count FROM buckets").fetchall()) == \
        _signature_counts(local_run)
    con.close()
    # Each dask worker analysed its share in ONE long-lived helper (which keeps its parsed
    # images across cores): one helper per worker thread, all cores accounted for.
    with cluster.client() as c:
        helpers = c.run(lambda: [(h.proc is not None and h.proc.poll() is None, h.cores)
                                 for h in __import__("ehbt_triage.helper",
                                                     fromlist=["_idle"])._idle])
    assert all(len(h) <= 1 and all(alive for alive, _ in h) for h in helpers.values()), helpers
    assert sum(n for h in helpers.values() for _, n in h) == len(local_run), helpers
    # A second run over the same cores: every one seen before, nothing analysed again.
    proc = triage(tool_env, "--scheduler", cluster.address, "--db", tmp_path / "db", core_dir)
    assert proc.returncode == 0, proc.stderr
    assert "0 analysed, %d seen before, 0 failed" % len(local_run) in proc.stdout


@pytest.mark.parametrize("fault,expect", [("segv", "worker died: SIGSEGV"),
                                          ("hang", "timed out after 3s")])
def test_dask_engine_crash_or_hang_fails_that_core_only(tool_env, cluster, cores, tmp_path,
                                                        fault, expect):
    paths = [cores["a"][0][0], cores["b"][0][0], cores["abort"][0][0]]
    t0 = time.monotonic()
    proc = triage(tool_env, "--scheduler", cluster.address, "--db", tmp_path / "db", "--jsonl",
                  tmp_path / "o.jsonl", "--timeout", "3" if fault == "hang" else "60", *paths,
                  extra_env={"EHBT_TRIAGE_TEST_FAULT": fault + ":/b-0.core"})
    assert proc.returncode == 1, proc.stdout + proc.stderr + cluster.log_text()
    recs = _jsonl_by_core(tmp_path / "o.jsonl")
    assert recs["b-0.core"]["status"] == "failed"
    assert expect in recs["b-0.core"]["error"], recs["b-0.core"]["error"]
    assert recs["a-0.core"]["status"] == "ok" and recs["abort-0.core"]["status"] == "ok"
    assert time.monotonic() - t0 < 60
    # The dask workers survived: both still serve.
    cluster.wait_for_workers(2, timeout=30)


def test_dask_worker_killed_mid_run_loses_no_core(tool_env, cluster, core_dir, local_run,
                                                   tmp_path):
    # Each analysis takes >= 1 s, so the kill lands while both workers are busy.
    run = subprocess.Popen(
        ["/usr/bin/python3", str(TRIAGE), "--scheduler", cluster.address, "--db",
         str(tmp_path / "db"), "--jsonl", str(tmp_path / "o.jsonl"), core_dir],
        env=dict(tool_env, EHBT_TRIAGE_TEST_DELAY="1"), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(3.0)
        victim = cluster.worker_pids()[0]
        os.kill(victim, signal.SIGKILL)
        out, err = run.communicate(timeout=240)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 0, out + err + cluster.log_text()
    recs = _jsonl_by_core(tmp_path / "o.jsonl")
    assert sorted(recs) == sorted(local_run)
    assert all(r["status"] == "ok" for r in recs.values()), recs
    # The nanny brings the killed worker back for the next tests.
    cluster.wait_for_workers(2, timeout=120)


def test_dask_core_that_keeps_killing_workers_is_recorded_failed(tool_env, cores, tmp_path,
                                                                  request):
    """Past the scheduler's allowed failures the task is KilledWorker: that core is failed with
    the reason, the others are stored, and the run ends.

    The bad order, made certain: one one-thread worker, and a scheduler that gives a task up
    at the first worker death it is in (allowed-failures 0). The ordinary core is queued
    behind the poison on the worker the poison kills, so the scheduler gives both up (it
    counts a death against every task the worker held). The run gives each KilledWorker core
    one more try alone (nothing else in flight): the ordinary core is then ok, the poison
    kills a worker alone too and is failed."""
    env = dict(tool_env, PYTHONPATH=os.pathsep.join([str(TRIAGE.parent),
                                                     tool_env["PYTHONPATH"]]))
    one = svc.DaskCluster(env, workers=1, allowed_failures=0)
    request.addfinalizer(one.stop)
    one.start()
    poison = tmp_path / "poison.core"
    shutil.copy(cores["assert"][0][0], poison)
    proc = triage(tool_env, "--scheduler", one.address, "--db", tmp_path / "db", "--jsonl",
                  tmp_path / "o.jsonl", poison, cores["a"][1][0],
                  extra_env={"EHBT_TRIAGE_TEST_FAULT": "killparent:/poison.core"}, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr + one.log_text()
    recs = _jsonl_by_core(tmp_path / "o.jsonl")
    assert recs["a-1.core"]["status"] == "ok", recs["a-1.core"]
    assert recs["poison.core"]["status"] == "failed"
    assert recs["poison.core"]["error"] == (
        "dask worker died while analysing it alone (given up by the scheduler past its "
        "allowed-failures)"), recs["poison.core"]
    # The bad order did happen: the scheduler gave up the first tasks of both (keys
    # ehbt-KIND-RUN-GENERATION-TASK-SERIAL: the poison task 0 submitted first, the ordinary
    # core task 1 second), then the poison's task alone, and nothing more of the ordinary core.
    with open(os.path.join(one.local_dir, "scheduler.log")) as f:
        scheduler_log = f.read()
    given_up = re.findall(r"Task ehbt-\w+-\w+-\d+-(\d+)-(\d+) marked as failed", scheduler_log)
    assert ("0", "1") in given_up and ("1", "2") in given_up, scheduler_log
    assert sorted(task for task, _serial in given_up) == ["0", "0", "1"], scheduler_log


def _helper_cores(cluster):
    """How many cores the analysis helpers of the cluster's workers have analysed, in all."""
    with cluster.client() as c:
        counts = c.run(lambda: sum(h.cores for h in __import__(
            "ehbt_triage.helper", fromlist=["_idle"])._idle))
    return sum(counts.values())


def test_dask_scheduler_restarted_mid_run_loses_no_core(tool_env, local_run, cores, tmp_path,
                                                         request):
    """The whole cluster stops mid-run (the scheduler and its one worker, a core in flight)
    and another starts on the same address: the run waits for it (it is not failed as
    "cancelled"), gives it the core in flight and those not given yet, and ends with every
    core stored once, each with the local mode's verdict."""
    env = dict(tool_env, PYTHONPATH=os.pathsep.join([str(TRIAGE.parent),
                                                     tool_env["PYTHONPATH"]]))
    first = svc.DaskCluster(env, workers=1)
    request.addfinalizer(first.stop)
    first.start()
    names = ["a-0.core", "a-1.core", "b-0.core", "abort-0.core"]
    paths = [os.path.join(os.path.dirname(cores["a"][0][0]), n) for n in names]
    # Each analysis takes >= 2 s on the one worker: the stop lands with cores left.
    run = subprocess.Popen(
        ["/usr/bin/python3", str(TRIAGE), "--scheduler", first.address, "--db",
         str(tmp_path / "db"), "--jsonl", str(tmp_path / "o.jsonl")] + paths,
        env=dict(tool_env, EHBT_TRIAGE_TEST_DELAY="2"), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    second = svc.DaskCluster(env, workers=1)
    second.port, second.address = first.port, first.address
    request.addfinalizer(second.stop)
    try:
        deadline = time.monotonic() + 120
        while not (os.path.exists(tmp_path / "o.jsonl") and read_jsonl(tmp_path / "o.jsonl")):
            assert run.poll() is None and time.monotonic() < deadline, first.log_text()
            time.sleep(0.2)
        first.stop()
        time.sleep(2.0)  # a result on its way when the cluster stopped is written by now
        done = read_jsonl(tmp_path / "o.jsonl")
        assert all(r["status"] == "ok" for r in done), done  # none failed as "cancelled"
        before = len(done)
        assert before < len(names), "the run was over before the stop"
        second.start()
        out, err = run.communicate(timeout=240)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 0, out + err + second.log_text()
    records = read_jsonl(tmp_path / "o.jsonl")
    assert sorted(os.path.basename(r["core"]) for r in records) == sorted(names), records
    for r in records:
        name = os.path.basename(r["core"])
        assert r["status"] == "ok", r
        assert r["signature"] == local_run[name]["signature"], name
    con = sqlite3.connect(tmp_path / "db")
    assert con.execute("SELECT COUNT(*), COUNT(DISTINCT path) FROM cores").fetchone() == (4, 4)
    assert sum(n for (n,) in con.execute("SELECT count FROM buckets")) == 4
    con.close()
    # What was left at the stop (the core in flight included) was analysed by the new
    # cluster, once each.
    assert _helper_cores(second) == len(names) - before, err


def test_dask_scheduler_that_never_comes_back_fails_what_is_left(tool_env, cores, tmp_path,
                                                                  request):
    """The cluster stops mid-run and nothing comes back: the run does not wait for ever. Past
    its wait (60 s; 3 s here, by EHBT_TRIAGE_TEST_GIVE_UP) the cores not analysed are failed
    with the reason, those analysed before stay ok, each core is recorded once, exit status 1."""
    env = dict(tool_env, PYTHONPATH=os.pathsep.join([str(TRIAGE.parent),
                                                     tool_env["PYTHONPATH"]]))
    one = svc.DaskCluster(env, workers=1)
    request.addfinalizer(one.stop)
    one.start()
    names = ["a-0.core", "a-1.core", "b-0.core"]
    paths = [os.path.join(os.path.dirname(cores["a"][0][0]), n) for n in names]
    run = subprocess.Popen(
        ["/usr/bin/python3", str(TRIAGE), "--scheduler", one.address, "--db",
         str(tmp_path / "db"), "--jsonl", str(tmp_path / "o.jsonl")] + paths,
        env=dict(tool_env, EHBT_TRIAGE_TEST_DELAY="2", EHBT_TRIAGE_TEST_GIVE_UP="3"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (os.path.exists(tmp_path / "o.jsonl") and read_jsonl(tmp_path / "o.jsonl")):
            assert run.poll() is None and time.monotonic() < deadline, one.log_text()
            time.sleep(0.2)
        one.stop()
        out, err = run.communicate(timeout=240)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 1, out + err
    records = read_jsonl(tmp_path / "o.jsonl")
    assert sorted(os.path.basename(r["core"]) for r in records) == sorted(names), records
    failed = [r for r in records if r["status"] == "failed"]
    assert 1 <= len(failed) < len(names), records  # the first was analysed, not the last
    for r in failed:
        assert r["error"].startswith("dask scheduler %s unreachable: " % one.address), r


# ---------------------------------------------------------------------------------------------
# PostgreSQL


def test_concurrent_runs_into_postgres_count_each_core_once(tool_env, cluster, postgres, cores,
                                                            local_run, tmp_path):
    url = postgres.fresh_db("concurrent")
    names = sorted(local_run)
    everything = [p for group in cores.values() for p, _ in group]
    # Overlapping inputs: run 1 has everything; run 2 has most of it again, plus renamed
    # copies (same content, another name), and runs on the dask cluster at the same time.
    d2 = tmp_path / "in2"
    d2.mkdir()
    for p in everything[2:]:
        os.symlink(p, d2 / os.path.basename(p))
    for p in everything[:4]:
        shutil.copy(p, d2 / ("copy-" + os.path.basename(p)))
    env = dict(tool_env, EHBT_TRIAGE_TEST_DELAY="0.2")  # long enough for the runs to overlap
    runs = [subprocess.Popen(["/usr/bin/python3", str(TRIAGE), "--db", url, "-j", "2",
                              "--jsonl", str(tmp_path / "1.jsonl")] + everything, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True),
            subprocess.Popen(["/usr/bin/python3", str(TRIAGE), "--db", url, "--scheduler",
                              cluster.address, "--jsonl", str(tmp_path / "2.jsonl"), str(d2)],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)]
    outs = [r.communicate(timeout=300) for r in runs]
    for r, (out, err) in zip(runs, outs):
        assert r.returncode == 0, out + err
    n, ok, column, rows, bare = _pg_counts(url)
    assert n == ok == len(names)  # every content once, whatever the names and the races
    assert bare == 0
    assert column == rows == _signature_counts(local_run)
    # Both runs saw every core they were given, as analysed or seen before.
    assert len(read_jsonl(tmp_path / "1.jsonl")) == len(everything)
    assert len(read_jsonl(tmp_path / "2.jsonl")) == len(os.listdir(d2))
    for rec in read_jsonl(tmp_path / "2.jsonl"):
        base = rec["core"].split("/")[-1].replace("copy-", "")
        assert rec["signature"] == local_run[base]["signature"], rec


def test_postgres_run_killed_leaves_whole_cores(tool_env, postgres, core_dir, local_run):
    url = postgres.fresh_db("killed")
    run = subprocess.Popen(["/usr/bin/python3", str(TRIAGE), "--db", url, "-j", "2", core_dir],
                           env=dict(tool_env, EHBT_TRIAGE_TEST_DELAY="1"),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while _ok_cores(url) < 2 and time.monotonic() < deadline and run.poll() is None:
        time.sleep(0.1)
    run.kill()  # SIGKILL: no handler, no cleanup
    run.wait()
    n, ok, column, rows, bare = _pg_counts(url)
    assert 0 < ok < len(local_run) and bare == 0 and column == rows
    proc = triage(tool_env, "--db", url, core_dir)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "%d analysed, %d seen before" % (len(local_run) - ok, ok) in proc.stdout
    n, ok, column, rows, bare = _pg_counts(url)
    assert n == ok == len(local_run) and column == rows == _signature_counts(local_run)


def test_bad_postgres_url_is_a_usage_error(tool_env, core_dir):
    port = svc.free_port()  # nothing listens there
    proc = triage(tool_env, "--db", "postgresql://ehbt@127.0.0.1:%d/x" % port, core_dir)
    assert proc.returncode == 2 and "cannot open the database" in proc.stderr, proc.stderr


# ---------------------------------------------------------------------------------------------
# The spool reader


def _bind_socket(path):
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    return s


def test_spool_special_and_unreadable_files_fail_alone(tool_env, user, cores):
    """As a non-root user (root reads everything): no hang, each bad input listed, exit 1,
    every good core stored."""
    spool = svc.shared_tmpdir(user, "ehbt-spool-")
    out = svc.shared_tmpdir(user, "ehbt-out-")
    sock = None
    try:
        good = [cores["a"][0][0], cores["b"][0][0], cores["abort"][0][0]]
        for g in good:
            shutil.copy(g, spool)
            os.chmod(os.path.join(spool, os.path.basename(g)), 0o644)
        os.mkfifo(os.path.join(spool, "fifo.core"))
        sock = _bind_socket(os.path.join(spool, "socket.core"))
        os.symlink("/nonexistent/gone.core", os.path.join(spool, "dangling.core"))
        secret = os.path.join(spool, "secret.core")
        shutil.copy(good[0], secret)
        os.chmod(secret, 0)
        with open(good[1], "rb") as f:
            body = f.read()
        import zlib

        comp = zlib.compressobj(wbits=31)  # gzip framing, as `gzip` writes
        with open(os.path.join(spool, "packed.core.gz"), "wb") as f:
            f.write(comp.compress(body) + comp.flush())
        os.chmod(os.path.join(spool, "packed.core.gz"), 0o644)
        named_fifo = os.path.join(out, "named.fifo")
        os.mkfifo(named_fifo)
        cmd = ["/usr/bin/python3", str(TRIAGE), "--db", os.path.join(out, "db"), "--jsonl",
               os.path.join(out, "o.jsonl"), "-j", "2", spool, named_fifo]
        proc = subprocess.run(svc.as_user(cmd, user), env=tool_env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=120)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        failed = proc.stdout.split("Failed (")[1]
        for name, why in (("fifo.core", "a FIFO, not opened"), ("socket.core", "a socket"),
                          ("dangling.core", "dangling symlink"),
                          ("secret.core", "Permission denied"),
                          ("named.fifo", "a FIFO, not opened")):
            line = [ln for ln in failed.splitlines() if name + ":" in ln]
            assert line and why in line[0], (name, failed)
        recs = _jsonl_by_core(os.path.join(out, "o.jsonl"))
        for g in good:
            assert recs[os.path.basename(g)]["status"] in ("ok", "seen_before")
        # The gzip core is read, and is the same core as its plain original: counted once.
        packed, plain = recs["packed.core.gz"], recs[os.path.basename(good[1])]
        assert packed["sha256"] == plain["sha256"] and packed["compression"] == "gzip"
        assert {packed["status"], plain["status"]} == {"ok", "seen_before"}
        con = sqlite3.connect(os.path.join(out, "db"))
        assert con.execute("SELECT COUNT(*) FROM cores WHERE status = 'ok'").fetchone()[0] == 3
        con.close()
        assert os.geteuid() != 0 or "ehbt-test" == user[0]
    finally:
        if sock is not None:
            sock.close()
        shutil.rmtree(spool, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)


def test_outputs_are_checked_before_any_work(tool_env, core_dir, tmp_path):
    for option in ("--html", "--jsonl", "--db"):
        t0 = time.monotonic()
        proc = triage(tool_env, "--db", tmp_path / "db", option, tmp_path / "no" / "such" / "f",
                      core_dir, cwd=tmp_path)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "%s %s" % (option, tmp_path / "no" / "such" / "f") in proc.stderr
        assert not (tmp_path / "db").exists() or option == "--db"
        assert time.monotonic() - t0 < 30
    os.mkfifo(tmp_path / "out.fifo")  # opening it for writing would block forever
    proc = triage(tool_env, "--db", tmp_path / "db2", "--html", tmp_path / "out.fifo", core_dir,
                  timeout=60)
    assert proc.returncode == 2 and "not a regular file" in proc.stderr


def test_version(tool_env):
    proc = triage(tool_env, "--version")
    top = open(os.path.join(os.path.dirname(str(TRIAGE)), "..", "CMakeLists.txt")).read()
    import re

    version = re.search(r"project\(ehbt VERSION ([0-9.]+)", top).group(1)
    assert proc.returncode == 0 and proc.stdout.strip() == "ehbt-triage " + version


# ---------------------------------------------------------------------------------------------
# report --since


def _age(db, names, days):
    """Makes the cores whose path ends with one of `names` look analysed `days` ago."""
    con = sqlite3.connect(db)
    for name in names:
        con.execute("UPDATE cores SET analysed_at = ? WHERE path LIKE ?",
                    (time.time() - days * 86400, "%/" + name))
    con.commit()
    con.close()


def test_report_since_lists_new_and_grown_buckets(tool_env, core_dir, local_run, tmp_path,
                                                  postgres):
    db = tmp_path / "db"
    proc = triage(tool_env, "--db", db, core_dir)
    assert proc.returncode == 0, proc.stderr
    # a: all three cores old (neither new nor grown); b: one old, one recent (grew);
    # abort and the others: all recent (new). One b core three days ago, one today.
    _age(db, ["a-0.core", "a-1.core", "a-2.core", "b-0.core"], 30)
    _age(db, ["b-1.core"], 3)
    proc = triage(tool_env, "report", "--db", db, "--since", "7d", "--html", tmp_path / "r.html")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = proc.stdout
    new, grew = text.split("New buckets (")[1].split("Buckets that grew (")
    sig = {n: local_run[n]["signature"] for n in local_run}
    assert sig["a-0.core"] not in text
    assert sig["b-0.core"] in grew and sig["b-0.core"] not in new
    assert sig["abort-0.core"] in new and sig["assert-0.core"] in new
    # Counts per day: the b line has 1 recent core of 2, on the day three days ago.
    line = [ln for ln in grew.splitlines() if sig["b-0.core"] in ln][0]
    cells = line.split()[:10]
    assert cells[0] == "1" and cells[1] == "2"
    assert cells[2:].count("1") == 1 and cells[2:].index("1") == 4  # 8 days shown: today -3
    page = open(tmp_path / "r.html").read()
    assert "Changes in the last 7d" in page and "New buckets" in page
    assert "Buckets that grew (1)" in page
    # The same query over PostgreSQL.
    url = postgres.fresh_db("report")
    assert triage(tool_env, "--db", url, core_dir).returncode == 0
    proc = triage(tool_env, "report", "--db", url, "--since", "36h")
    assert proc.returncode == 0, proc.stderr
    assert "New buckets (%d)" % len(_signature_counts(local_run)) in proc.stdout
    # No store: an error, and none is created.
    proc = triage(tool_env, "report", "--db", tmp_path / "none.sqlite")
    assert proc.returncode == 2 and not (tmp_path / "none.sqlite").exists()


def test_a_path_named_report_is_triaged_when_written_as_such(tool_env, cores, tmp_path):
    shutil.copy(cores["a"][0][0], tmp_path / "report")
    proc = triage(tool_env, "--db", tmp_path / "db", "./report", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 analysed" in proc.stdout
