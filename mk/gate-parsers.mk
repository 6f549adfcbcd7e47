# Acceptance-gate parsers and threshold profiles. Included by the Makefile.
.PHONY: test-gate-parsers check-profiles

test-gate-parsers: venv collection ## run the gate parser and threshold-profile unit tests (about a second)
	$(PY) -m pytest tests/unit/plugins/module_utils/gate/parsers tests/unit/plugins/module_utils/gate/test_catalog.py tests/unit/plugins/module_utils/gate/test_profile.py tests/unit/plugins/module_utils/gate/test_judging.py $(PYTEST_ARGS)

check-profiles: venv collection ## validate every threshold profile in profiles/gate/ and lab/profiles/gate/
	$(PY) -c 'import glob, gpufleet; \
	from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.profile import load_profile; \
	[print("%-14s %2d checks  OK" % (p.name, len(p.checks))) for p in map(load_profile, sorted(glob.glob("profiles/gate/*.yml") + glob.glob("lab/profiles/gate/*.yml")))]'
