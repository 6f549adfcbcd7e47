"""Attestation's cost per join: playbooks/tasks/attest.yml through ansible-playbook.

The node is localhost (connection local) with a real swtpm as its TPM and `gpufleet attest` is
the controller, as in tests/integration/attest (its Site). The first join checks the EK
certificate, creates the EK and AK, enrolls the AK by credential activation and verifies a
quote with the event log; each join after it checks the EK again and verifies a fresh quote.
Prints one JSON line per AK algorithm: wall seconds of each ansible-playbook run and the load
average. No network or SSH is in these numbers: over SSH each task also pays its connection.

    .venv/bin/python -m benchmarks.attest.bench_join --joins 3   # from the checkout's root
"""
import argparse
import json
import os
import pathlib
import tempfile
import time

from tests.integration.attest.test_join_attestation import Site, _cli
from tests.unit.gpufleet.attest.swtpm_support import require_tools


def _timed_join(site, algorithm):
    started = time.monotonic()
    proc = site.join(ak_algorithm=algorithm)
    if proc.returncode != 0:
        raise SystemExit("the join failed:\n" + proc.stdout[-3000:] + proc.stderr[-1000:])
    return round(time.monotonic() - started, 2)


def measure(algorithm, joins):
    with tempfile.TemporaryDirectory() as folder:
        site = Site(pathlib.Path(folder))
        try:
            recorded = _cli("references", "--pcrread", site.path("pcrread.txt"), "--image-version", "2026.05.1",
                            "--firmware-version", "1.4.2", "--key", site.path("image.key"),
                            "--out", site.path("refs.json"))
            if recorded.returncode != 0:
                raise SystemExit("recording the references failed: " + recorded.stderr)
            first = _timed_join(site, algorithm)
            later = [_timed_join(site, algorithm) for _ in range(joins)]
        finally:
            site.tpm.stop()
    return {"ak_algorithm": algorithm, "first_join_s": first, "later_joins_s": later,
            "load_average": [round(x, 2) for x in os.getloadavg()]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--joins", type=int, default=3, help="joins after the first (default 3)")
    parser.add_argument("--algorithm", action="append", choices=("rsa", "ecc"),
                        help="AK algorithm (repeatable; default: rsa, the playbook's default, then ecc)")
    args = parser.parse_args()
    require_tools()
    for algorithm in args.algorithm or ("rsa", "ecc"):
        print(json.dumps(measure(algorithm, args.joins)), flush=True)


if __name__ == "__main__":
    main()
