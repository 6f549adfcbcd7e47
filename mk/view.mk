# The fleet view (docs/fleet-view.md): why, the seam, metrics, dashboard, fleet page.
.PHONY: test-view
test-view: ## fleet view tests: unit, metrics endpoint on loopback, fleet page in headless Chromium, layer scenarios
	$(PY) -m pytest tests/unit/gpufleet/view tests/unit/gpufleet/report tests/integration/view $(PYTEST_ARGS)
