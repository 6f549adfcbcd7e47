"""One module per ``gpufleet`` subcommand (see gpufleet.main)."""
