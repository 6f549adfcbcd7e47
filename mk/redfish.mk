# Redfish control plane and lab BMC layer (issue 2). Included by the Makefile.
.PHONY: demo-redfish lab-bmc-start lab-bmc-stop test-redfish test-redfish-unit test-faults-bmc bench-redfish bench-redfish-smoke

REDFISH_DEMO_CONFIG ?= lab/bmc/demo/rack.yml
REDFISH_DEMO_STATE := build/lab-bmc-demo

demo-redfish: ## start an emulated 8-node rack (TLS, auth), power-cycle it with the modules, stop it
	$(PY) -m lab.bmc.labctl start --config $(REDFISH_DEMO_CONFIG)
	$(PY) -m lab.bmc.labctl nodes --config $(REDFISH_DEMO_CONFIG) > $(REDFISH_DEMO_STATE)/nodes.yml; \
	$(VENV)/bin/ansible-playbook -i localhost, lab/playbooks/redfish_demo.yml -e @$(REDFISH_DEMO_STATE)/nodes.yml; \
	rc=$$?; $(PY) -m lab.bmc.labctl stop --config $(REDFISH_DEMO_CONFIG); exit $$rc

lab-bmc-start: ## start the emulated BMC racks of LAB_BMC_CONFIG (default: the demo rack)
	$(PY) -m lab.bmc.labctl start --config $(or $(LAB_BMC_CONFIG),$(REDFISH_DEMO_CONFIG))

lab-bmc-stop: ## stop the emulated BMC racks of LAB_BMC_CONFIG
	$(PY) -m lab.bmc.labctl stop --config $(or $(LAB_BMC_CONFIG),$(REDFISH_DEMO_CONFIG))

test-redfish-unit: venv collection ## Redfish unit tests (seconds)
	$(PY) -m pytest tests/unit/plugins/module_utils/redfish tests/unit/plugins/modules/test_redfish_*.py $(PYTEST_ARGS)

test-redfish: venv collection ## Redfish unit + integration tests (emulated racks; about 3 minutes)
	$(PY) -m pytest tests/unit/plugins/module_utils/redfish tests/unit/plugins/modules/test_redfish_*.py tests/integration/redfish $(PYTEST_ARGS)

bench-redfish: venv collection ## the 1,000-system benchmark, methods a a3 b c d d3 (about 30 minutes)
	$(PY) benchmarks/redfish/bench.py --out build/redfish-bench-results.json

bench-redfish-smoke: venv collection ## the benchmark harness on 4 racks x 10 systems (about a minute)
	$(PY) benchmarks/redfish/bench.py --racks 4 --nodes-per-rack 10 --subset 8 --methods a,a3,c,d,d3,d-min --workdir build/redfish-bench-smoke

test-faults-bmc: venv collection ## fault matrix, BMC part: 14 faults through the fault proxy on an emulated rack (about a minute; takes the lab lock)
	flock /tmp/gpufleet-lab.lock $(PY) -m pytest tests/integration/faults/test_bmc_faults.py $(PYTEST_ARGS)
