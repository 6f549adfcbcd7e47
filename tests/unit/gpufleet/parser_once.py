"""``gpufleet.main.main`` with its argument parser built once, for property tests that call it per example.

``build_parser`` takes no input and imports every command module (50-90 ms on a loaded CI
machine); a property test that calls ``main`` for each of hundreds of examples spent most of
its time there. Inside ``parser_built_once()`` every call still goes through ``main``: the
parse of that example's argv, the command, its exit code and its one-line errors. The parser
itself is covered by the rest of the suite, which builds it per call as users run it.
"""
import contextlib
from unittest import mock

from gpufleet import main as cli_main

_BUILT = []


@contextlib.contextmanager
def parser_built_once():
    if not _BUILT:
        _BUILT.append(cli_main.build_parser())
    with mock.patch.object(cli_main, "build_parser", lambda: _BUILT[0]):
        yield
