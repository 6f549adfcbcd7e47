# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Where the ledger is: a file path (SQLite) or a ``postgresql://`` URL, and how to show it.

A URL may carry a password (``postgresql://user:secret@host/db`` or ``?password=secret``);
``mask`` is the only form that goes into a message, a result or a log, and ``scrub``
removes the password from any text (a driver error may quote the connection string).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

try:
    from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit
except ImportError:  # pragma: no cover - Python 2 is not supported by the ledger
    parse_qsl = unquote = urlencode = urlsplit = urlunsplit = None

__all__ = ["is_postgres", "mask", "password_of", "secrets_of", "scrub", "one_line", "expand", "MASK"]

MASK = "********"
_SCHEMES = ("postgresql://", "postgres://")


def is_postgres(location):
    """True when ``location`` names a PostgreSQL database rather than an SQLite file."""
    return str(location).lower().startswith(_SCHEMES)


def expand(location):
    """A file path with ``~`` and variables expanded; a URL unchanged (its ``$`` is data)."""
    if is_postgres(location):
        return location
    return os.path.abspath(os.path.expanduser(os.path.expandvars(location)))


def password_of(location):
    """The password a URL carries (user info or ``password=`` query), else None."""
    if not is_postgres(location):
        return None
    parts = urlsplit(location)
    if parts.password:
        return unquote(parts.password)
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key == "password" and value:
            return value
    return None


def secrets_of(location):
    """Every form of the URL's password as it may appear in text (raw and URL-quoted)."""
    if not is_postgres(location):
        return ()
    raw = urlsplit(location).password
    found = [password_of(location), raw]
    return tuple(s for s in found if s)


def mask(location):
    """The location with any password replaced by ``********``; paths are unchanged."""
    if not is_postgres(location):
        return location
    parts = urlsplit(location)
    netloc = parts.netloc
    if parts.password is not None:
        userinfo, _sep, hostport = netloc.rpartition("@")
        user = userinfo.split(":", 1)[0]
        netloc = "%s:%s@%s" % (user, MASK, hostport)
    query = urlencode([(k, MASK if k == "password" else v)
                       for k, v in parse_qsl(parts.query, keep_blank_values=True)], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def scrub(text, *secrets):
    """``text`` with every non-empty secret (raw and URL-quoted forms) replaced by the mask,
    on one line (see ``one_line``)."""
    text = str(text)
    for secret in secrets:
        if secret:
            text = text.replace(secret, MASK)
    return one_line(text)


def one_line(text):
    """``text`` with control characters escaped (``\\x1c``), so an error stays one line.

    A driver's error may quote bytes of a damaged file, and a path may hold a newline.
    """
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in str(text))
