# Inputs of the golden-image template. Pins come from one file per image version
# (packer/versions/<version>.yml), rendered by the `gpufleet image` wrapper into a
# -var-file; build_id, pins_sha256 and output_dir are set by the wrapper per build.

variable "image_version" {
  type        = string
  description = "Image version, e.g. 2026.03.1 or lab; written to /etc/gpufleet/image-release."
}

variable "build_id" {
  type        = string
  default     = "unset"
  description = "Deterministic build id (<version>-<builder>-<inputs digest>) set by the wrapper."
}

variable "pins_sha256" {
  type        = string
  default     = "unset"
  description = "sha256 of the pin file this build installs."
}

variable "os_id" {
  type        = string
  description = "os-release ID of the base OS (debian, ubuntu)."
}

variable "os_version_id" {
  type        = string
  description = "os-release VERSION_ID of the base OS (12, 22.04)."
}

variable "packages" {
  type        = map(string)
  description = "Exact Debian package versions to install and hold: name => version."
}

variable "apt_sources" {
  type        = list(string)
  default     = []
  description = "Complete one-line apt sources written to /etc/apt/sources.list.d/gpufleet.list."
}

variable "apt_keys" {
  type = list(object({
    name        = string
    url         = string
    fingerprint = string
  }))
  default     = []
  description = "Repository signing keys: fetched, checked against the fingerprint, stored as /usr/share/keyrings/<name>.gpg."
}

variable "output_dir" {
  type        = string
  default     = "build/images/unset"
  description = "Directory that receives the exported artifact and the in-image inventory."
}

variable "base_image" {
  type        = string
  default     = "gpufleet/debian-base:bookworm"
  description = "docker source: local base image (no registry is needed; pull is off)."
}

variable "container_name" {
  type        = string
  default     = "gpufleet-image-build"
  description = "docker source: name of the temporary build container."
}

variable "disk_image_url" {
  type        = string
  default     = "https://cloud.debian.org/images/cloud/bookworm/latest/debian-12-genericcloud-amd64.qcow2"
  description = "qemu source: cloud disk image the whole-disk build starts from."
}

variable "disk_image_checksum" {
  type        = string
  default     = "file:https://cloud.debian.org/images/cloud/bookworm/latest/SHA512SUMS"
  description = "qemu source: checksum of disk_image_url (sha256:..., sha512:... or file:URL)."
}

variable "qemu_format" {
  type        = string
  default     = "qcow2"
  description = "qemu source: output disk format, raw (Ironic) or qcow2 (MAAS, Ironic)."
}

variable "qemu_accelerator" {
  type        = string
  default     = "kvm"
  description = "qemu source: kvm on build hosts with working KVM, tcg otherwise (slow)."
}

variable "disk_size" {
  type        = string
  default     = "20G"
  description = "qemu source: size of the output disk."
}

variable "qemu_ssh_password" {
  type        = string
  default     = "gpufleet-build"
  sensitive   = true
  description = "qemu source: build-only password of the temporary packer user (locked by the cleanup step)."
}
