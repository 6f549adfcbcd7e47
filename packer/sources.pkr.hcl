# One source per builder; the wrapper picks one with -only=<builder>.node.

# Root filesystem tarball: the lab's node image and a MAAS "tgz" image.
source "docker" "node" {
  image       = var.base_image
  pull        = false
  export_path = "${var.output_dir}/rootfs.tar"
  run_command = ["-d", "-i", "-t", "--name", var.container_name, "--entrypoint=/bin/sh", "--", "{{.Image}}"]
}

# Whole-disk image (raw or qcow2) for Ironic or MAAS, built from a cloud disk image
# that cloud-init configures through the NoCloud seed served from packer/http.
source "qemu" "node" {
  iso_url          = var.disk_image_url
  iso_checksum     = var.disk_image_checksum
  disk_image       = true
  disk_size        = var.disk_size
  format           = var.qemu_format
  accelerator      = var.qemu_accelerator
  headless         = true
  memory           = 4096
  cpus             = 2
  output_directory = "${var.output_dir}/qemu"
  vm_name          = "disk.${var.qemu_format}"
  http_directory   = "${path.root}/http"
  qemuargs         = [["-smbios", "type=1,serial=ds=nocloud-net;s=http://{{ .HTTPIP }}:{{ .HTTPPort }}/"]]
  ssh_username     = "packer"
  ssh_password     = var.qemu_ssh_password
  ssh_timeout      = "30m"
  shutdown_command = "sudo shutdown -P now"
}
