"""The input options of ``gpufleet why``, ``seam`` and ``report --fleet``, apart from the code
that reads them (``gpufleet.view.cli``), so a command's ``--help`` needs no collection."""

__all__ = ["add_input_arguments"]


def add_input_arguments(parser, slurm=True):
    parser.add_argument("--lab", action="store_true",
                        help="read the running lab: its ledger, rack inventory and slurmctld container")
    parser.add_argument("--ledger", help="lifecycle ledger: SQLite file or postgresql:// URL (required without --lab)")
    parser.add_argument("--policy", required=True, help="capacity policy YAML (docs/capacity.md)")
    parser.add_argument("--inventory", help="rack inventory: pools own the hosts their member rules claim "
                        "(default: the ledger's nodes, by name pattern or SKU)")
    parser.add_argument("--gate-dir", help="saved gate reports <node>.json (default: <ledger dir>/reports/gate)")
    if slurm:
        parser.add_argument("--squeue-json", help="saved `squeue --json` output (default: run squeue --json)")
        parser.add_argument("--sinfo-json", help="saved `sinfo --json` output (default: run sinfo --json)")
        parser.add_argument("--slurm-prefix", help="command run before squeue/sinfo, e.g. 'ssh slurmctl' "
                            "(default: none; --lab: docker exec <slurmctld container>)")
