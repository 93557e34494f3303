# SPDX-License-Identifier: Apache-2.0
"""A PostgreSQL password given to ehbt-triage is never printed (issue 31): not in messages,
the run summary, the JSONL, the HTML report, `report`'s output or the store; and libpq's own
ways of finding the password (PGPASSFILE) work with a URL that has none.

Against a real PostgreSQL server (scale_services.Postgres) in which a role logs in with a
password over TCP (scram-sha-256), the superuser of the tests keeps trust. The password holds
'@' and ':', so a URL carries it percent-encoded and a pgpass file backslash-escaped: each
form is looked for in every output."""

import os
import sys
from urllib.parse import quote

import pytest

import scale_services as svc
from test_triage import (TRIAGE, core_dir, cores, crashy, read_jsonl,  # noqa: F401
                         tool_env, triage)

sys.path.insert(0, str(TRIAGE.parent))
from ehbt_triage.credentials import is_postgres, mask, secrets  # noqa: E402
from ehbt_triage.stores import describe  # noqa: E402

PASSWORD = "S3cr@t:Pa55-w0rd"
WRONG = "Wr0ng-Guess-4711"
ROLE = "triage"


# ---------------------------------------------------------------------------------------------
# The masking function


@pytest.mark.parametrize("given, shown", [
    ("postgresql://triage:S3cretPass@db.example/triage",
     "postgresql://triage:***@db.example/triage"),
    ("postgres://:S3cretPass@db.example:5433/triage",
     "postgres://:***@db.example:5433/triage"),
    ("postgresql://triage@db.example/triage", "postgresql://triage@db.example/triage"),
    ("postgresql://db.example:5432/triage", "postgresql://db.example:5432/triage"),
    ("postgresql://tri%40ge:p%40ss%3Aw%2Frd@h1:5432,h2:5433/triage?sslmode=require",
     "postgresql://tri%40ge:***@h1:5432,h2:5433/triage?sslmode=require"),
    ("postgresql://triage@db.example/triage?sslmode=require&password=S3cret%26Pass&"
     "application_name=ehbt",
     "postgresql://triage@db.example/triage?sslmode=require&password=***&application_name=ehbt"),
    ("postgresql://triage@db.example/triage?password=S3cretPass",
     "postgresql://triage@db.example/triage?password=***"),
    ("host=db.example port=5432 user=triage password=S3cretPass dbname=triage",
     "host=db.example port=5432 user=triage password=*** dbname=triage"),
    ("host=db.example password = 'S3cret \\' Pass' dbname=triage",
     "host=db.example password = *** dbname=triage"),
    ("dbname=triage sslpassword=KeyPass99", "dbname=triage sslpassword=***"),
])
def test_mask_hides_every_form_of_password(given, shown):
    assert is_postgres(given)
    assert describe(given) == shown
    assert mask(given, given) == shown
    assert mask(given) == shown  # the forms are recognised without knowing the password


def test_mask_leaves_sqlite_paths_and_plain_text():
    for path in ("crashes.sqlite", "/srv/a=b.sqlite", "a=b", "/tmp/x:y@z/db"):
        assert not is_postgres(path)
        assert describe(path) == path
    text = 'missing "=" after "password" in connection info string'
    assert mask(text) == text


def test_secrets_are_read_as_libpq_reads_them():
    assert secrets("postgresql://u:p%40ss%3Aw@h/d") == ["p%40ss%3Aw", "p@ss:w"]
    assert secrets("postgresql://u@h/d?password=a%26b") == ["a%26b", "a&b"]
    assert secrets("host=h password='a \\' b'") == ["'a \\' b'", "a ' b"]
    assert secrets("postgresql://u@h/d") == []
    assert secrets("postgresql://h:5432/d") == []


def test_mask_scrubs_a_quoted_fragment_of_the_password():
    """libpq's parse errors quote the piece they could not read (its text, as psycopg 3.1
    raises it), which no URL pattern recognises: the password of --db itself is replaced."""
    spec = "postgresql://u:S3cret%zzPass@h/d"
    assert (mask('invalid percent-encoded token: "S3cret%zzPass"', spec)
            == 'invalid percent-encoded token: "***"')
    # Too short to replace in free text without masking ordinary words: only as a password.
    assert mask("is ab", "postgresql://u:ab@h/d") == "is ab"


def test_traceback_of_an_unexpected_error_is_masked(tmp_path):
    """An error nobody handles (a server that goes away mid-run) ends with a traceback: the
    hook cli.main installs masks it like every message."""
    import subprocess

    url = "postgresql://triage:%s@db.example/triage" % quote(PASSWORD, safe="")
    code = ("import sys; sys.path.insert(0, %r)\n"
            "from ehbt_triage.cli import _mask_tracebacks\n"
            "_mask_tracebacks(%r)\n"
            "raise RuntimeError('lost ' + %r + ' and ' + %r)\n"
            % (str(TRIAGE.parent), url, url, PASSWORD))
    proc = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=60)
    assert proc.returncode == 1
    assert ("RuntimeError: lost postgresql://triage:***@db.example/triage and ***"
            in proc.stderr), proc.stderr
    _assert_nowhere({"stderr": proc.stderr}, PASSWORD)


# ---------------------------------------------------------------------------------------------
# A real server with a password role


@pytest.fixture(scope="module")
def pg(request):
    server = svc.Postgres(svc.unprivileged_user())
    request.addfinalizer(server.stop)
    server.start()
    import psycopg

    with psycopg.connect(server.url("postgres"), autocommit=True) as c:
        c.execute("SET password_encryption = 'scram-sha-256'")
        c.execute("CREATE ROLE %s LOGIN PASSWORD '%s'" % (ROLE, PASSWORD))
    # The tests' superuser keeps trust; every other role logs in with its password over TCP.
    hba = os.path.join(server.data, "pg_hba.conf")
    with open(hba, "w") as f:
        f.write("local all all trust\n"
                "host all ehbt 127.0.0.1/32 trust\n"
                "host all all 127.0.0.1/32 scram-sha-256\n")
    with psycopg.connect(server.url("postgres"), autocommit=True) as c:
        c.execute("SELECT pg_reload_conf()")
    return server


def _fresh_db(pg, name):
    import psycopg

    with psycopg.connect(pg.url("postgres"), autocommit=True) as c:
        c.execute("DROP DATABASE IF EXISTS %s" % name)
        c.execute("CREATE DATABASE %s OWNER %s" % (name, ROLE))
    return name


def _url(pg, db, password=PASSWORD, port=None):
    return "postgresql://%s:%s@127.0.0.1:%d/%s" % (ROLE, quote(password, safe=""),
                                                   port or pg.port, db)


def _env(tool_env, tmp_path, **extra):
    """No password from anywhere but --db (or what the test names): no PGPASSWORD, and a
    PGPASSFILE that does not exist unless the test gives one."""
    env = {k: v for k, v in tool_env.items() if not k.startswith("PG")}
    env["PGPASSFILE"] = str(tmp_path / "no-such-pgpass")
    env.update(extra)
    return env


def _forms(*passwords):
    """Each password as a user writes it and as a URL or pgpass file carries it."""
    out = set()
    for p in passwords:
        out |= {p, quote(p, safe=""), p.replace("\\", "\\\\").replace(":", "\\:")}
    return out


def _assert_nowhere(texts, *passwords):
    for where, text in texts.items():
        for form in _forms(*passwords):
            assert form not in text, "%s shows the password (%r):\n%s" % (where, form, text)


def test_wrong_password_is_not_shown(pg, tool_env, core_dir, tmp_path):
    db = _fresh_db(pg, "cred_wrong")
    jsonl, html = tmp_path / "o.jsonl", tmp_path / "r.html"
    proc = triage(_env(tool_env, tmp_path), "--db", _url(pg, db, WRONG), "--jsonl", jsonl,
                  "--html", html, core_dir)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    # The server refused the password: libpq says so, and names the URL masked.
    assert "cannot open the database postgresql://%s:***@127.0.0.1:%d/%s: " % (
        ROLE, pg.port, db) in proc.stderr, proc.stderr
    assert "password authentication failed" in proc.stderr, proc.stderr
    rep = triage(_env(tool_env, tmp_path), "report", "--db", _url(pg, db, WRONG))
    assert rep.returncode == 2 and ":***@" in rep.stderr, rep.stderr
    outputs = {"stdout": proc.stdout, "stderr": proc.stderr, "report stdout": rep.stdout,
               "report stderr": rep.stderr}
    for path in (jsonl, html):  # checked before the database: made empty, or not at all
        if path.exists():
            outputs[path.name] = path.read_text()
    _assert_nowhere(outputs, WRONG, PASSWORD)


def test_unreachable_port_is_not_shown(pg, tool_env, core_dir, tmp_path):
    url = _url(pg, "triage", port=svc.free_port())  # nothing listens there
    proc = triage(_env(tool_env, tmp_path), "--db", url, core_dir)
    rep = triage(_env(tool_env, tmp_path), "report", "--db", url)
    for p in (proc, rep):
        assert p.returncode == 2, p.stdout + p.stderr
        assert "cannot open the database postgresql://%s:***@127.0.0.1:" % ROLE in p.stderr, \
            p.stderr
    _assert_nowhere({"stdout": proc.stdout, "stderr": proc.stderr, "report stdout": rep.stdout,
                     "report stderr": rep.stderr}, PASSWORD)


def test_url_libpq_cannot_parse_is_not_shown(pg, tool_env, core_dir, tmp_path):
    """libpq quotes the piece of the URL it could not decode -- here the password itself."""
    bad = "Pa55%zz-w0rd-xyz"
    url = "postgresql://%s:%s@127.0.0.1:%d/triage" % (ROLE, bad, pg.port)
    proc = triage(_env(tool_env, tmp_path), "--db", url, core_dir)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "percent-encoded" in proc.stderr and '"***"' in proc.stderr, proc.stderr
    _assert_nowhere({"stdout": proc.stdout, "stderr": proc.stderr}, bad)


def _run_and_report(pg, tool_env, core_dir, tmp_path, spec, env):
    jsonl, html, rhtml = tmp_path / "o.jsonl", tmp_path / "r.html", tmp_path / "since.html"
    proc = triage(env, "--db", spec, "--jsonl", jsonl, "--html", html, "-j", "2", core_dir)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(read_jsonl(jsonl)) == len(os.listdir(core_dir))
    rep = triage(env, "report", "--db", spec, "--html", rhtml)
    assert rep.returncode == 0, rep.stdout + rep.stderr
    return proc, rep, jsonl.read_text(), html.read_text(), rhtml.read_text()


def _store_meta(pg, db):
    import psycopg

    with psycopg.connect(pg.url(db)) as c:
        return repr(c.execute("SELECT key, value FROM meta").fetchall())


@pytest.mark.parametrize("form", ["userinfo", "query", "keywords"])
def test_successful_run_shows_the_password_masked(pg, tool_env, core_dir, tmp_path, form):
    db = _fresh_db(pg, "cred_ok_" + form)
    spec, shown = {
        "userinfo": (_url(pg, db), "postgresql://%s:***@127.0.0.1:%d/%s" % (ROLE, pg.port, db)),
        "query": ("postgresql://%s@127.0.0.1:%d/%s?password=%s"
                  % (ROLE, pg.port, db, quote(PASSWORD, safe="")),
                  "postgresql://%s@127.0.0.1:%d/%s?password=***" % (ROLE, pg.port, db)),
        "keywords": ("host=127.0.0.1 port=%d user=%s password='%s' dbname=%s"
                     % (pg.port, ROLE, PASSWORD, db),
                     "host=127.0.0.1 port=%d user=%s password=*** dbname=%s"
                     % (pg.port, ROLE, db)),
    }[form]
    proc, rep, jsonl, html, rhtml = _run_and_report(pg, tool_env, core_dir, tmp_path, spec,
                                                    _env(tool_env, tmp_path))
    assert "Database: %s" % shown in proc.stdout, proc.stdout
    assert "Database: %s" % shown in rep.stdout, rep.stdout
    for page in (html, rhtml):
        assert "database <code>%s</code>" % shown.replace("'", "&#x27;") in page
    _assert_nowhere({"stdout": proc.stdout, "stderr": proc.stderr, "jsonl": jsonl,
                     "html": html, "report stdout": rep.stdout, "report stderr": rep.stderr,
                     "report html": rhtml, "meta": _store_meta(pg, db)}, PASSWORD)


def test_password_from_pgpassfile(pg, tool_env, core_dir, tmp_path):
    db = _fresh_db(pg, "cred_pgpass")
    url = "postgresql://%s@127.0.0.1:%d/%s" % (ROLE, pg.port, db)
    # Without a password anywhere the server refuses the role: the file is what lets it in.
    proc = triage(_env(tool_env, tmp_path), "--db", url, core_dir)
    assert proc.returncode == 2 and "password" in proc.stderr, proc.stderr
    pgpass = tmp_path / "pgpass"
    # pgpass(5): HOST:PORT:DB:USER:PASSWORD, ':' and '\' in a field escaped with '\'.
    pgpass.write_text("127.0.0.1:%d:%s:%s:%s\n" % (
        pg.port, db, ROLE, PASSWORD.replace("\\", "\\\\").replace(":", "\\:")))
    os.chmod(pgpass, 0o600)  # libpq ignores a file its group or others can read
    env = _env(tool_env, tmp_path, PGPASSFILE=str(pgpass))
    proc, rep, jsonl, html, rhtml = _run_and_report(pg, tool_env, core_dir, tmp_path, url, env)
    assert "Database: %s" % url in proc.stdout, proc.stdout
    assert "Database: %s" % url in rep.stdout, rep.stdout
    _assert_nowhere({"stdout": proc.stdout, "stderr": proc.stderr, "jsonl": jsonl,
                     "html": html, "report stdout": rep.stdout, "report html": rhtml},
                    PASSWORD)
