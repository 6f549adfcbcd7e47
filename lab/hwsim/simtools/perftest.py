"""Lab-only ``ib_write_bw`` (perftest) simulation.

SIMULATION ONLY. Without a host argument it plays the server side, with one the client;
both print perftest's report with the HCA's bandwidth from the model (a slow_hca fault
lowers it). Unknown devices fail like perftest does.
"""
import sys

_DASH = "-" * 87


def _opts(argv):
    device, gbits, host, size, i = None, False, None, 65536, 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-d", "--ib-dev"):
            device = argv[i + 1]
            i += 2
        elif arg in ("-s", "--size"):
            size = int(argv[i + 1])
            i += 2
        elif arg in ("-D", "--duration", "-x", "--gid-index", "-q", "--qp", "-p", "--port", "-n", "--iters",
                     "-m", "--mtu", "--use_cuda"):
            i += 2
        elif arg == "--report_gbits":
            gbits = True
            i += 1
        elif arg.startswith("-"):
            i += 1
        else:
            host = arg
            i += 1
    return device, gbits, host, size


def _report(hca, gbits, size):
    bw = float(hca["bw_gbps"])
    peak = bw + 0.04
    unit = "Gb/sec" if gbits else "MB/sec"
    if not gbits:
        bw, peak = bw * 1e3 / 8, peak * 1e3 / 8
    rate = float(hca["bw_gbps"]) * 1e9 / 8 / size / 1e6
    print(" #bytes     #iterations    BW peak[%s]    BW average[%s]   MsgRate[Mpps]" % (unit, unit))
    print(" %-10d %-16d %-18.2f %.2f \t\t   %.6f" % (size, 30000, peak, bw, rate))
    print(_DASH)


def main(model, argv):
    device, gbits, host, size = _opts(argv)
    hcas = dict((h["name"], h) for h in model.hcas())
    if device is None:
        device = sorted(hcas)[0] if hcas else None
    if device not in hcas:
        sys.stderr.write(" IB device %s not found\n Unable to find the Infiniband/RoCE device\n" % device)
        return 1
    if host is None:
        print("\n" + "*" * 36 + "\n* Waiting for client to connect... *\n" + "*" * 36)
    print(_DASH)
    print("                    RDMA_Write BW Test")
    print(" Dual-port       : OFF\t\tDevice         : %s" % device)
    print(" Number of qps   : 1\t\tTransport type : IB")
    print(" Connection type : RC\t\tUsing SRQ      : OFF")
    print(" PCIe relax order: ON")
    print(" TX depth        : 128")
    print(" CQ Moderation   : 100")
    print(" Mtu             : 4096[B]")
    print(" Link type       : IB")
    print(" Max inline data : 0[B]")
    print(" rdma_cm QPs\t : OFF")
    print(" Data ex. method : Ethernet")
    print(_DASH)
    print(" local address: LID 0x07 QPN 0x0146 PSN 0xd5ef3a RKey 0x1fff00 VAddr 0x007f6b5c5f1000")
    print(" remote address: LID 0x07 QPN 0x0147 PSN 0x5fd2b5 RKey 0x1fff01 VAddr 0x007f0e5a8e0000")
    print(_DASH)
    _report(hcas[device], gbits, size)
    return 0
