"""Stand-in for ansible-test's pip bootstrap script on machines that reach only PyPI.

ansible-test downloads ``get-pip-<version>.py`` from ci-files.testing.ansible.com, which the
CI network does not reach. It runs that script inside each new sanity venv with pip's
install arguments; this does the same with the interpreter's bundled ``ensurepip`` followed
by a normal ``pip install`` of the requested packages from the configured index (PyPI).
scripts/sanity.sh copies it into ansible-test's cache before running.
"""
import subprocess
import sys

subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade", "--default-pip"])
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install"] + args))
