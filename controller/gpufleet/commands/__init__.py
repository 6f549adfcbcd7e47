"""One module per ``gpufleet`` subcommand (see gpufleet.main)."""
import argparse


def whole_number(low, high, what):
    """argparse ``type=``: a whole number from ``low`` to ``high``, else an error saying it is not ``what``."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if not low <= value <= high:
            raise argparse.ArgumentTypeError("%r is not %s" % (text, what))
        return value
    return parse
