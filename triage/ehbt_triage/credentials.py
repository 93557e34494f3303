# SPDX-License-Identifier: Apache-2.0
"""Passwords in a --db value, and the one function that hides them: mask().

A PostgreSQL store is named as libpq names a database: a URL (postgresql://USER:PW@HOST/DB,
postgres://...; a password may also be a query parameter, ?password=PW) or a keyword/value
string (host=HOST dbname=DB password=PW). Both are handed to psycopg unchanged. Anything else
is a SQLite file (stores.py).

Every line that shows a --db value (messages, the run summary, the reports) or may quote one
(psycopg's errors: libpq's parse errors quote the fragment they could not read, password
included; a traceback) goes through mask(). No import of the package's own modules: the
stores and the commands all use it.
"""

import functools
import re

MASK = "***"

_SCHEMES = ("postgresql://", "postgres://")

# libpq's keyword/value grammar: KEY = VALUE, VALUE unquoted (backslash escapes) or in single
# quotes (backslash escapes), pairs separated by white space.
_VALUE = r"(?:'(?:[^'\\]|\\.)*'|(?:[^\s'\\]|\\.)(?:[^\s\\]|\\.)*)"
_PAIR = re.compile(r"\s*([A-Za-z_]+)\s*=\s*(" + _VALUE + r")?")
# A keyword/value string names PostgreSQL only when it names one of these (a SQLite file
# called "a=b" stays a file).
_CONNINFO_KEYS = frozenset(("host", "hostaddr", "port", "dbname", "user", "password",
                            "service", "passfile"))
_SECRET_KEYS = ("password", "sslpassword")

# The password of a URL: after the scheme and the user name, up to the '@' that ends the
# user info (libpq reads the user info up to the first '@' before the first '/'). In free
# text (an error message) it stops at white space too.
_URL_PASSWORD = re.compile(r"((?:postgresql|postgres)://[^\s:/@]*):[^\s/@]*@", re.IGNORECASE)
# ?password=PW or &password=PW (also sslpassword, the client key's).
_QUERY_PASSWORD = re.compile(r"([?&](?:ssl)?password=)[^\s&#]*", re.IGNORECASE)
# password=PW, password = 'P W' of a keyword/value string (not one of a URL query).
_KEYWORD_PASSWORD = re.compile(r"((?<![\w?&])(?:ssl)?password\s*=\s*)" + _VALUE + "?",
                               re.IGNORECASE)

# Shorter passwords are masked where they appear as a password (the three forms above), not
# wherever their characters happen to occur in a message: "ab" would mask half the words.
_MIN_LITERAL = 4


def is_url(spec):
    return spec.startswith(_SCHEMES)


def _conninfo_pairs(spec):
    """[(key, raw value)] when spec is a whole libpq keyword/value string, else None."""
    pairs = []
    pos = 0
    spec = spec.rstrip()
    while pos < len(spec):
        m = _PAIR.match(spec, pos)
        if not m or m.end() == pos:
            return None
        pairs.append((m.group(1).lower(), m.group(2) or ""))
        pos = m.end()
        if pos < len(spec) and not spec[pos].isspace() and spec[pos - 1:pos] != "'":
            return None
    return pairs or None


def is_conninfo(spec):
    """Whether spec is a libpq keyword/value string naming a PostgreSQL database."""
    pairs = _conninfo_pairs(spec)
    return bool(pairs) and any(k in _CONNINFO_KEYS for k, _ in pairs)


def is_postgres(spec):
    """Whether a --db value names a PostgreSQL database (else it is a SQLite file path)."""
    return is_url(spec) or is_conninfo(spec)


def _unquote_conninfo(value):
    if value.startswith("'"):
        value = value[1:-1] if value.endswith("'") and len(value) > 1 else value[1:]
    return re.sub(r"\\(.)", r"\1", value)


def secrets(spec):
    """The passwords a --db value carries, as written and as libpq reads them (percent- or
    backslash-decoded): a message may quote either."""
    return list(_secrets(spec)) if spec else []


@functools.lru_cache(maxsize=8)
def _secrets(spec):
    """secrets() of one spec, worked out once: `watch` masks a log line per core with the same
    --db value (~6 us a line to parse it again)."""
    found = []
    if is_url(spec):
        rest = spec.split("://", 1)[1]
        at, slash = rest.find("@"), rest.find("/")
        if at >= 0 and (slash < 0 or at < slash):  # user info, as libpq finds it
            _, colon, password = rest[:at].partition(":")
            if colon:
                found.append(password)
        query = spec.split("?", 1)[1] if "?" in spec else ""
        for param in query.split("#", 1)[0].split("&"):
            key, _, value = param.partition("=")
            if key.lower() in _SECRET_KEYS:
                found.append(value)
    else:
        for key, value in _conninfo_pairs(spec) or []:
            if key in _SECRET_KEYS:
                found.append(value)
                found.append(_unquote_conninfo(value))
    from urllib.parse import unquote  # here: only a run that names PostgreSQL needs it

    for value in list(found):
        found.append(unquote(value))
    # Longest first: a password that contains another is replaced whole.
    return tuple(sorted({s for s in found if s}, key=len, reverse=True))


def mask(text, spec=None):
    """text with every password in it replaced by ***: those of PostgreSQL URLs (user info,
    ?password=), of keyword/value strings (password=), and, when spec (a --db value) is
    given, every occurrence of spec's own passwords (from 4 characters: see _MIN_LITERAL),
    however a message quotes them."""
    if text is None:
        return None
    text = str(text)
    text = _URL_PASSWORD.sub(r"\1:" + MASK + "@", text)
    text = _QUERY_PASSWORD.sub(r"\1" + MASK, text)
    text = _KEYWORD_PASSWORD.sub(r"\1" + MASK, text)
    for secret in secrets(spec):
        if len(secret) >= _MIN_LITERAL:
            text = text.replace(secret, MASK)
    return text
