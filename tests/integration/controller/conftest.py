"""One lab for every controller scenario module here (day-2 and the fleet view run on the lab
the capacity scenarios leave): modules run in file order and each starts from the state the
last one left. Part of `make test`; alone: `make test-controller-lab`."""
import os
import signal

import pytest

from tests.helpers import ensure_base_image, need_docker
from tests.integration.controller.steps import gpufleet


@pytest.fixture(scope="session")
def lab():
    need_docker()
    ensure_base_image()
    gpufleet("image", "build", "lab", "--generate-key")
    # `lab down` also kills a controller an interrupted run left on the lab (lab.twin.lab.kill_controller)
    gpufleet("lab", "down", "--purge", timeout=300)
    gpufleet("lab", "up", timeout=600)
    gpufleet("lab", "publish", "--version", "lab")
    state = {"controller": None}
    yield state
    if state["controller"]:
        state["controller"].stop(signal.SIGKILL, timeout=60)
    gpufleet("lab", "down", timeout=300, check=False)
