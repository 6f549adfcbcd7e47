"""Controller command line for the gpufleet.baremetal collection."""
