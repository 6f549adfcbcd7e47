# gpufleet.baremetal — developer entry points. `make help` lists them.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
ROOT := $(abspath .)
export PATH := $(ROOT)/$(VENV)/bin:$(PATH)
export ANSIBLE_COLLECTIONS_PATH := $(ROOT)/build/collections
export ANSIBLE_CONFIG := $(ROOT)/ansible.cfg
COLLECTION_LINK := build/collections/ansible_collections/gpufleet/baremetal

.DEFAULT_GOAL := help
.PHONY: help host venv collection demo test test-unit base-image build-collection clean

# `make test` workers (pytest-xdist): the lab's scenarios run on one, the machine node on the
# other, the rest wherever a worker is free (groups: tests/conftest.py).
# TEST_WORKERS=0 runs everything in one process.
TEST_WORKERS ?= 2

# The README's main command. Each area's mk file may set DEMO_TARGET; the lab's wins.
DEMO_TARGET ?= demo-redfish

help: ## list targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | sort | awk -F':.*## ' '{printf "  %-22s %s\n", $$1, $$2}'

host: ## install host packages (apt: the demo's and the tests') and start dockerd; needs root or sudo
	scripts/bootstrap-host.sh $(HOST_ARGS)

demo: ## run the main job on the lab (installs only the packages the demo uses)
	$(MAKE) host venv collection HOST_ARGS=--demo
	$(MAKE) $(DEMO_TARGET)

venv: $(VENV)/.installed ## create the controller venv from requirements.txt
$(VENV)/.installed: requirements.txt controller/pyproject.toml lab/pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -r requirements.txt -e controller/ -e lab/
	touch $@

collection: $(COLLECTION_LINK) ## expose this checkout as the gpufleet.baremetal collection
$(COLLECTION_LINK):
	mkdir -p $(dir $@)
	ln -sfn ../../../.. $@

base-image: ## build the debootstrap base image gpufleet/debian-base:bookworm (no registry needed)
	lab/images/base/build.sh

# The ledger suite runs on SQLite and on PostgreSQL: scripts/ci-postgres.sh installs and starts
# Debian's PostgreSQL (needs root or sudo, like dockerd) unless GPUFLEET_TEST_PG_URL is set.
test: host venv collection ## run every test (unit, sanity, lint, molecule, image, lab integration; PostgreSQL ledger)
	GPUFLEET_TEST_PG_URL="$${GPUFLEET_TEST_PG_URL:-$$(scripts/ci-postgres.sh | tail -1)}" $(PY) -m pytest tests -n $(TEST_WORKERS) --durations=60 $(PYTEST_ARGS)

test-unit: venv collection ## run the unit tests only (minutes; PYTEST_ARGS="-n 2" uses two workers)
	$(PY) -m pytest tests/unit $(PYTEST_ARGS)

build-collection: venv ## build the collection tarball and the gpufleet wheel into build/dist (the EE's inputs)
	mkdir -p build/dist
	$(VENV)/bin/ansible-galaxy collection build --force --output-path build/dist .
	rm -f build/dist/gpufleet-[0-9]*.whl
	$(VENV)/bin/pip wheel --no-deps -w build/dist controller/
	rm -rf controller/build

clean: ## remove build outputs (keeps the venv)
	rm -rf build .pytest_cache

# Each area adds its own targets in mk/<area>.mk.
-include mk/*.mk
