import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle import ledger_location as loc


@pytest.mark.parametrize("location,masked,secret", [
    ("/var/lib/gpufleet/ledger.sqlite", "/var/lib/gpufleet/ledger.sqlite", None),
    ("postgresql://ctl@db:5432/fleet", "postgresql://ctl@db:5432/fleet", None),
    ("postgresql://ctl:s3cr%40t@db:5432/fleet", "postgresql://ctl:********@db:5432/fleet", "s3cr@t"),
    ("postgres://ctl@db/fleet?password=pw9&sslmode=require",
     "postgres://ctl@db/fleet?password=********&sslmode=require", "pw9"),
])
def test_mask_and_password(location, masked, secret):
    assert loc.mask(location) == masked
    assert loc.password_of(location) == secret
    for form in loc.secrets_of(location):
        assert form not in loc.mask(location)


def test_scrub_removes_raw_and_quoted_forms():
    url = "postgresql://ctl:s3cr%40t@db/fleet"
    text = "failed for %s (password s3cr@t)" % url
    cleaned = loc.scrub(text, *loc.secrets_of(url))
    assert "s3cr" not in cleaned and cleaned.count(loc.MASK) == 2


def test_paths_expand_and_urls_stay():
    assert loc.expand("~/l.sqlite").endswith("/l.sqlite") and not loc.expand("~/l.sqlite").startswith("~")
    assert loc.expand("postgresql://u:$x@h/d") == "postgresql://u:$x@h/d"
    assert loc.is_postgres("PostgreSQL://h/d") and not loc.is_postgres("/tmp/postgresql.sqlite")


def test_scrub_keeps_an_error_on_one_line():
    # A driver error may quote bytes of a damaged file; a path may hold a newline.
    text = loc.scrub("malformed schema (x\x1cy)\nat /tmp/a\rb", "nothing")
    assert text.splitlines() == [text] and "\\x1c" in text and "\\n" in text
    assert loc.one_line("ledger é.sqlite") == "ledger é.sqlite"
