#!/bin/sh
# /init of the gpufleet installer ramdisk: devices, network, then the deploy agent.
# Exit 0 of the agent: the disk is imaged, reboot into it. Anything else: halt here with the
# reason on the console, never reboot into a disk that was not imaged.
# Kernel arguments read: gpufleet.config=URL (the node's install config), or
# gpufleet.config_base=URL (the agent asks for URL/<SMBIOS system UUID>.json, the UUID a BMC
# reports as the Redfish System's UUID); gpufleet.ip=ADDR/PREFIX gpufleet.gw=ADDR for a static
# management address (default: DHCP on every wired interface).
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /run /tmp && mount -t devpts devpts /dev/pts
[ -d /sys/firmware/efi/efivars ] && mount -t efivarfs efivarfs /sys/firmware/efi/efivars
exec </dev/console >/dev/console 2>&1
say() { echo "gpufleet-installer [$(cut -d" " -f1 /proc/uptime)s]: $*"; }
halt_here() {
    say "HALTED: $*"
    say "the disk was not made bootable; fix the cause and insert the installer again"
    while true; do sleep 3600; done
}
arg() { for word in $(cat /proc/cmdline); do case "$word" in "$1="*) echo "${word#*=}";; esac; done; }

# the firmware's Secure Boot variables as hex (4 attribute bytes, then the value), for the
# console record; the join refuses a node whose booted image is not enforcing, not the installer
efivar() {
    f=/sys/firmware/efi/efivars/$1-8be4df61-93ca-11d2-aa0d-00e098032b8c
    if [ -r "$f" ]; then od -An -tx1 "$f" | tr -d ' \n'; else echo missing; fi
}

say "starting ($(uname -r))"
say "secure boot: SecureBoot=$(efivar SecureBoot) SetupMode=$(efivar SetupMode)"
/lib/systemd/systemd-udevd --daemon && udevadm trigger --action=add && udevadm settle --timeout=60

ip link set lo up
ADDR=$(arg gpufleet.ip)
if [ -n "$ADDR" ]; then
    IFACE=$(ls /sys/class/net | grep -v '^lo$' | head -1)
    ip link set "$IFACE" up && ip addr add "$ADDR" dev "$IFACE" || halt_here "network: cannot set $ADDR on $IFACE"
    GW=$(arg gpufleet.gw)
    [ -z "$GW" ] || ip route add default via "$GW" || halt_here "network: cannot route via $GW"
else
    dhclient -4 -1 $(ls /sys/class/net | grep -v "^lo$") || halt_here "network: no DHCP answer (dhclient -1 tries for 60 s)"
fi
say "network up: $(ip -4 -o addr show scope global | awk '{print $2, $4}' | tr '\n' ' ')"

CONFIG=$(arg gpufleet.config)
if [ -z "$CONFIG" ]; then
    BASE=$(arg gpufleet.config_base)
    UUID=$(tr 'A-Z' 'a-z' </sys/class/dmi/id/product_uuid 2>/dev/null)
    [ -n "$BASE" ] && [ -n "$UUID" ] || halt_here "config: no gpufleet.config= or gpufleet.config_base= on the kernel line"
    CONFIG="${BASE%/}/$UUID.json"
fi

CA=""
[ -f /etc/gpufleet/ca.pem ] && CA="--ca /etc/gpufleet/ca.pem"
cd /opt/gpufleet && python3 -m gpufleet.deploy.agent --config "$CONFIG" $CA \
    --image-key /etc/gpufleet/image-signing.pub
rc=$?
[ "$rc" -eq 0 ] || halt_here "the deploy agent failed (exit $rc); its reason is printed above"
say "imaged; rebooting into the disk"
sync
echo b >/proc/sysrq-trigger
