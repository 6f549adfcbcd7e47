"""The shape of a ``why`` answer, its exit code and its text form."""
from dataclasses import dataclass, field
from typing import Optional, Tuple

from gpufleet.view.layers import LAYER_NAMES

__all__ = ["Answer", "EXIT_CODES", "exit_code", "render_text", "to_dict", "duration"]

# gpufleet why exit codes (docs/fleet-view.md): 0 nothing blocks (running, schedulable, or a
# pool with no blocked demand); 11/12/13 blocked at L1/L2/L3; 1 error (unknown subject,
# unreadable input); 2 usage error (argparse).
EXIT_CODES = {None: 0, "L1": 11, "L2": 12, "L3": 13, "L4": 0}


@dataclass(frozen=True)
class Answer:
    subject: str
    kind: str                     # job | node | pool
    layer: Optional[str]          # L1..L4, None when there is nothing to say
    blocking: bool
    summary: str
    evidence: Tuple[str, ...] = ()
    details: dict = field(default_factory=dict)


def exit_code(answer):
    return EXIT_CODES[answer.layer] if answer.blocking else 0


def duration(seconds):
    """``95`` -> ``1m35s``; ``None`` -> ``?``."""
    if seconds is None:
        return "?"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return "%dh%02dm" % (hours, minutes)
    return "%dm%02ds" % (minutes, secs) if minutes else "%ds" % secs


def to_dict(answer):
    return {"subject": answer.subject, "kind": answer.kind, "layer": answer.layer,
            "layer_name": LAYER_NAMES.get(answer.layer), "blocking": answer.blocking,
            "summary": answer.summary, "evidence": list(answer.evidence),
            "details": answer.details, "exit_code": exit_code(answer)}


def render_text(answer):
    head = "%s %s: %s" % (answer.kind, answer.subject, "BLOCKED" if answer.blocking else "not blocked")
    if answer.layer:
        head += " at %s %s" % (answer.layer, LAYER_NAMES[answer.layer])
    lines = [head, "  " + answer.summary]
    lines += ["  - " + line for line in answer.evidence]
    return "\n".join(lines) + "\n"
