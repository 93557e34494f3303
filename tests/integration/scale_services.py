# SPDX-License-Identifier: Apache-2.0
"""Real servers for the scale-out tests of ehbt-triage, started as a user would start them:
a PostgreSQL server in a temporary directory (initdb/pg_ctl as an unprivileged user) and a
dask scheduler with two dask-worker processes on 127.0.0.1. Every start has a matching stop;
the fixtures in test_triage_scale.py call them from finalizers."""

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time

PG_BIN = "/usr/lib/postgresql/15/bin"
TEST_USER = "ehbt-test"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def unprivileged_user():
    """(name, uid, gid) of a user that is not root: ourselves when we are not root, else a
    system user made for the tests (PostgreSQL refuses to run as root, and only a non-root
    user can meet an unreadable file)."""
    if os.geteuid() != 0:
        p = pwd.getpwuid(os.geteuid())
        return p.pw_name, p.pw_uid, p.pw_gid
    try:
        p = pwd.getpwnam(TEST_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--user-group", "--no-create-home",
                        "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin",
                        TEST_USER], check=True)
        p = pwd.getpwnam(TEST_USER)
    return p.pw_name, p.pw_uid, p.pw_gid


def as_user(cmd, user):
    """cmd run as `user` (a no-op when that is already us)."""
    name, uid, gid = user
    if os.geteuid() == uid:
        return list(cmd)
    return ["setpriv", "--reuid=%d" % uid, "--regid=%d" % gid, "--clear-groups", "--"] + list(cmd)


def shared_tmpdir(user, prefix):
    """A fresh directory under /tmp that `user` owns and can reach (pytest's tmp_path lies
    under a root-only directory)."""
    d = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    os.chmod(d, 0o755)
    if os.geteuid() == 0:
        os.chown(d, user[1], user[2])
    return d


class Postgres:
    def __init__(self, user):
        self.user = user
        self.dir = shared_tmpdir(user, "ehbt-pg-")
        self.data = os.path.join(self.dir, "data")
        self.port = free_port()
        self.log = os.path.join(self.dir, "server.log")
        self.started = False

    def _run(self, *cmd):
        proc = subprocess.run(as_user(cmd, self.user), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=120, cwd=self.dir)
        assert proc.returncode == 0, "%s failed:\n%s" % (cmd[0], proc.stdout)
        return proc.stdout

    def start(self):
        self._run(os.path.join(PG_BIN, "initdb"), "-D", self.data, "-U", "ehbt", "-A", "trust",
                  "--no-sync", "-E", "UTF8", "--locale=C")
        self._run(os.path.join(PG_BIN, "pg_ctl"), "-D", self.data, "-l", self.log, "-w",
                  "-t", "60", "-o", "-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off "
                  "-c max_connections=50" % (self.port, self.dir), "start")
        self.started = True
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as c:
            c.execute("CREATE DATABASE triage")
        return self

    def url(self, db="triage"):
        return "postgresql://ehbt@127.0.0.1:%d/%s" % (self.port, db)

    def fresh_db(self, name):
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as c:
            c.execute("DROP DATABASE IF EXISTS %s" % name)
            c.execute("CREATE DATABASE %s" % name)
        return self.url(name)

    def stop(self):
        if self.started:
            subprocess.run(as_user([os.path.join(PG_BIN, "pg_ctl"), "-D", self.data, "-m",
                                    "immediate", "-w", "stop"], self.user),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
            self.started = False
        shutil.rmtree(self.dir, ignore_errors=True)


class DaskCluster:
    """dask-scheduler plus `workers` dask-worker processes (one thread each, with their
    nanny, as `dask-worker` starts them by default)."""

    def __init__(self, env, workers=2, local_dir=None, allowed_failures=1):
        self.env = env
        self.allowed_failures = allowed_failures
        self.port = free_port()
        self.address = "tcp://127.0.0.1:%d" % self.port
        self.nworkers = workers
        self.procs = []
        self.local_dir = local_dir or tempfile.mkdtemp(prefix="ehbt-dask-")
        self.logs = []

    def _spawn(self, name, cmd):
        log = open(os.path.join(self.local_dir, name + ".log"), "w")
        self.logs.append(log)
        proc = subprocess.Popen(cmd, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        self.procs.append(proc)
        return proc

    def start(self):
        # A task gives up after killing 2 workers (dask's default: 4), to keep the test short.
        self.env = dict(self.env, DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES=str(
            self.allowed_failures))
        self._spawn("scheduler", ["dask", "scheduler", "--host", "127.0.0.1", "--port",
                                  str(self.port), "--no-dashboard",
                                  "--dashboard-address", "127.0.0.1:0"])
        for n in range(self.nworkers):
            self.add_worker("w%d" % n)
        self.wait_for_workers(self.nworkers)
        return self

    def add_worker(self, name):
        return self._spawn(name, ["dask", "worker", self.address, "--nthreads", "1",
                                  "--nworkers", "1", "--no-dashboard", "--name", name,
                                  "--local-directory", self.local_dir])

    def client(self):
        from distributed import Client

        return Client(self.address, timeout=60, set_as_default=False)

    def wait_for_workers(self, n, timeout=120):
        with self.client() as c:
            c.wait_for_workers(n, timeout=timeout)

    def worker_pids(self):
        """The pids of the worker processes (children of the nannies), from the scheduler."""
        with self.client() as c:
            return list(c.run(os.getpid).values())

    def log_text(self):
        out = []
        for log in self.logs:
            log.flush()
            with open(log.name) as f:
                out.append("== %s\n%s" % (log.name, f.read()[-3000:]))
        return "\n".join(out)

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 20
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        for log in self.logs:
            log.close()
        shutil.rmtree(self.local_dir, ignore_errors=True)
