# Provisioning: install exactly the pinned stack, hold it, prove every pin is installed,
# write /etc/gpufleet/image-release, hand the package inventory back, clean the image.
build {
  sources = ["source.docker.node", "source.qemu.node"]

  provisioner "shell" {
    execute_command = "chmod +x {{ .Path }}; {{ .Vars }} sudo -E {{ .Path }}"
    environment_vars = [
      "DEBIAN_FRONTEND=noninteractive",
      "GPUFLEET_IMAGE_VERSION=${var.image_version}",
      "GPUFLEET_BUILD_ID=${var.build_id}",
      "GPUFLEET_PINS_SHA256=${var.pins_sha256}",
      "GPUFLEET_OS_ID=${var.os_id}",
      "GPUFLEET_OS_VERSION_ID=${var.os_version_id}",
      "GPUFLEET_PINS=${join(" ", [for name, version in var.packages : "${name}=${version}"])}",
      "GPUFLEET_APT_SOURCES=${join("|", var.apt_sources)}",
      "GPUFLEET_APT_KEYS=${join(" ", [for key in var.apt_keys : "${key.name},${key.url},${key.fingerprint}"])}",
    ]
    scripts = [
      "${path.root}/scripts/10-apt-sources.sh",
      "${path.root}/scripts/20-install-pins.sh",
      "${path.root}/scripts/30-verify-pins.sh",
      "${path.root}/scripts/40-image-release.sh",
      "${path.root}/scripts/50-inventory.sh",
    ]
  }

  # One download per file: the docker communicator cannot download directories.
  provisioner "file" {
    direction   = "download"
    source      = "/var/lib/gpufleet-build/packages.tsv"
    destination = "${var.output_dir}/inventory/packages.tsv"
  }

  provisioner "file" {
    direction   = "download"
    source      = "/var/lib/gpufleet-build/kernels.txt"
    destination = "${var.output_dir}/inventory/kernels.txt"
  }

  provisioner "file" {
    direction   = "download"
    source      = "/var/lib/gpufleet-build/image-release"
    destination = "${var.output_dir}/inventory/image-release"
  }

  provisioner "shell" {
    execute_command = "chmod +x {{ .Path }}; {{ .Vars }} sudo -E {{ .Path }}"
    scripts         = ["${path.root}/scripts/90-cleanup.sh"]
  }
}
