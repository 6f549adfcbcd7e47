"""``gpufleet slurm resume|suspend|resume-fail HOSTLIST``: Slurm's power-saving programs.

They hand the request to the capacity controller through its spool and return at once
(docs/controller.md, "Slurm power saving"). In slurm.conf:

    ResumeProgram=/usr/local/sbin/gpufleet-slurm-resume     # exec gpufleet slurm resume "$@"
"""
import os

NAME = "slurm"
HELP = "Slurm power-saving entry points: hand resume/suspend/resume-fail to the capacity controller"
DEFAULT_SPOOL = "/var/spool/gpufleet-controller"


def cmd(args):
    from gpufleet.controller import spool

    path = spool.submit(args.spool, args.kind, args.hostlist)
    print("queued %s of %s for the capacity controller: %s" % (args.kind, args.hostlist, path))
    return 0


def register(parser):
    parser.add_argument("kind", choices=["resume", "suspend", "resume-fail"])
    parser.add_argument("hostlist", help="Slurm host list, e.g. lab-r1n[1-4]")
    parser.add_argument("--spool", default=os.environ.get("GPUFLEET_CONTROLLER_SPOOL", DEFAULT_SPOOL),
                        help="the controller's request spool (default $GPUFLEET_CONTROLLER_SPOOL or %s)"
                        % DEFAULT_SPOOL)
    parser.set_defaults(func=cmd)
