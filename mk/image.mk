# Golden images: validate, build and sign, import, tests. Included by the Makefile.
.PHONY: image-lab image-lab-import image-validate image-list image-demo test-image-unit test-image

IMAGE_CLI := $(VENV)/bin/gpufleet
IMAGE_TAG ?= gpufleet/node:lab

image-lab: venv collection base-image ## build and sign the lab image into build/images/lab (reuses a verified identical build)
	$(IMAGE_CLI) image build lab --generate-key

image-lab-import: image-lab ## verify the lab artifact, then docker import it as $(IMAGE_TAG)
	$(IMAGE_CLI) image import build/images/lab/manifest.json --public-key build/keys/lab-signing.pub --tag $(IMAGE_TAG)

image-list: venv collection ## list image versions (pin files) and which are built
	$(IMAGE_CLI) image list

# The qemu source is validated against a local stand-in disk: the pinned cloud-image URLs
# and their checksum files are fetched only by a real qemu build.
image-validate: venv collection ## validate every pin file, packer fmt, packer validate per version x builder
	@disk=$$(mktemp /tmp/gpufleet-image-standin.XXXXXX); trap 'rm -f $$disk' EXIT; \
	  $(IMAGE_CLI) image validate --offline-disk-image $$disk

test-image-unit: venv collection ## run the image unit tests (about 2 s)
	$(PY) -m pytest tests/unit/plugins/module_utils/image tests/unit/plugins/modules/test_image_verify.py \
	  tests/unit/plugins/modules/test_image_drift_info.py tests/unit/cli/test_image.py $(PYTEST_ARGS)

test-image: test-image-unit ## validate matrix + real lab build twice, verify, tamper, drift (about 5 min)
	$(PY) -m pytest tests/integration/image $(PYTEST_ARGS)

IMAGE_DEMO_DIR := build/image-demo
image-demo: image-lab ## build + sign the lab image, show its manifest, watch verification refuse a tampered copy
	$(IMAGE_CLI) image show build/images/lab/manifest.json
	rm -rf $(IMAGE_DEMO_DIR) && mkdir -p $(IMAGE_DEMO_DIR)
	cp build/images/lab/manifest.json build/images/lab/manifest.json.sig build/images/lab/lab.rootfs.tar.gz $(IMAGE_DEMO_DIR)/
	printf 'tampered' | dd of=$(IMAGE_DEMO_DIR)/lab.rootfs.tar.gz bs=1 seek=4096 conv=notrunc status=none
	@echo "== verifying the tampered copy (must be refused):"
	@if $(IMAGE_CLI) image verify $(IMAGE_DEMO_DIR)/manifest.json --public-key build/keys/lab-signing.pub; then \
	  echo "FAIL: a tampered artifact verified" >&2; exit 1; else echo "== refused, as it must be"; fi
	@echo "== verifying the original:"
	$(IMAGE_CLI) image verify build/images/lab/manifest.json --public-key build/keys/lab-signing.pub --expected-version lab
