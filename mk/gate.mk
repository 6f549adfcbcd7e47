# Acceptance gate: runner, phases, reports, module, offline evaluate, lab shims. Included by the Makefile.
.PHONY: test-gate test-gate-unit test-gate-bad-input gate-node-image

test-gate-unit: venv collection ## run the gate runner/phases/report/module/evaluate unit tests (under a second)
	$(PY) -m pytest tests/unit/plugins/module_utils/gate/test_runner.py tests/unit/plugins/module_utils/gate/test_phases.py \
	  tests/unit/plugins/module_utils/gate/test_report.py tests/unit/plugins/modules/test_acceptance_gate.py \
	  tests/unit/plugins/module_utils/gate/test_tpm.py tests/unit/plugins/module_utils/gate/test_measure.py \
	  tests/unit/plugins/module_utils/gate/test_runner_hang.py tests/unit/gpufleet/test_gate_evaluate.py $(PYTEST_ARGS)

test-gate-bad-input: venv collection ## property-based tests of every gate parser, the profile loader and gate evaluate (GPUFLEET_HYPOTHESIS_EXAMPLES inputs per test)
	$(PY) -m pytest tests/unit/plugins/module_utils/gate/test_bad_input.py tests/unit/gpufleet/test_gate_evaluate_bad_input.py $(PYTEST_ARGS)

test-gate: test-gate-unit test-gate-bad-input ## run the gate unit tests, the hwsim format tests and the lab integration test (about 2 min)
	$(PY) -m pytest tests/integration/gate $(PYTEST_ARGS)

gate-node-image: base-image ## build gpufleet-gate-node:bookworm (debian base + fio + iperf3) for the gate integration test
	docker build -q -t gpufleet-gate-node:bookworm tests/integration/gate/node-image
