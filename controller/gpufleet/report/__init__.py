"""Bring-up report: per-node table, gate checks (measured vs threshold), timeline chart.

``collect`` reads the lifecycle ledger and the saved gate reports into one plain dict;
``render_markdown`` and ``render_html`` turn it into text. No network, no clock: the
caller passes ``generated_at``. The fleet page (``collect_fleet``, ``render_fleet_html``) shows
the seam, job start breakdowns and why each pending job waits (docs/fleet-view.md).
"""
from gpufleet.report.fleet import collect_fleet
from gpufleet.report.fleet_render import render_fleet_html
from gpufleet.report.model import collect
from gpufleet.report.render import render_html, render_markdown, write_report

__all__ = ["collect", "render_html", "render_markdown", "write_report", "collect_fleet", "render_fleet_html"]
