"""The original's side files, written from stored rows on export: `.liza/alerts.log` in the
original watcher's line format, and `circuit_breaker_report.md` of the current trip as
liza-analyze.sh writes it. Neither is read back on import (docs/decisions.md "Circuit breaker
report file").
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from boards import protocol as p
from boards.coordination.models.projects import Project
from boards.coordination.models.records import (
    Alert,
    CircuitBreaker,
)
from boards.coordination.selectors.breaker import breaker_open_trip
from boards.interop.entries import _ordered

from .yaml_io import dump_yaml


def export_alerts_log(project: Project) -> str:
    """`.liza/alerts.log` in the original watcher's line format, `[ts] LEVEL message`, oldest
    first: a line when an alert was raised, and when it was escalated and resolved (the
    original repeated a line every sweep instead; the alert's count says how many saw it)."""
    lines: list[tuple[datetime, int, str]] = []
    for alert in Alert.objects.filter(project=project).order_by("created", "id"):
        message = " ".join(alert.message.split())
        lines.append((alert.created, alert.pk, f"{alert.level.upper()} {message}"))
        if alert.escalated_at is not None:
            lines.append(
                (alert.escalated_at, alert.pk, f"ESCALATED {alert.level.upper()} {message}")
            )
        if alert.resolved_at is not None:
            lines.append((alert.resolved_at, alert.pk, f"RESOLVED {message}"))
    lines.sort(key=lambda line: (line[0], line[1]))
    return "".join(f"[{p.format_timestamp(ts)}] {text}\n" for ts, _, text in lines)


def export_breaker_report(project: Project) -> str | None:
    """`.liza/circuit_breaker_report.md` of the current trip, as liza-analyze.sh writes it
    (original-liza.md §2.7: triggered time, pattern, severity, evidence, the raw anomalies YAML,
    a human checklist; the spec's evidence table), rendered from the report the trip stored.

    None when there is no current trigger, or when its trip kept no report (an imported one):
    nothing is made up that the trip did not record. The file name is always ours, never the
    `report_file` an imported state carries (a path from a file is not a place to write).
    """
    breaker = CircuitBreaker.objects.filter(project=project).first()
    if breaker is None or breaker.status != CircuitBreaker.Status.TRIGGERED:
        return None
    trigger, trip = breaker.current_trigger, breaker_open_trip(project=project)
    report = trip.report if trip is not None else None
    if not isinstance(trigger, dict) or not report:
        return None
    if trigger.get("timestamp") != report.get("triggered"):
        return None  # the stored report is another trip's: not this trigger's file
    anomalies = report.get("anomalies", [])
    number = {a.get("id"): n for n, a in enumerate(anomalies, start=1)}
    lines = [
        "# Circuit Breaker Report",
        "",
        f"**Triggered:** {report['triggered']}",
        f"**Pattern:** {report['pattern']}",
        f"**Severity:** {report['severity']}",
        f"**Sprint:** {report['sprint']}",
        "",
        "## Evidence",
        "",
        f"{_md_text(report['condition'])}.",
        "",
        *_md_evidence(report.get("evidence", []), number),
    ]
    for match in report.get("also_matched", []):
        lines += [
            f"### Also matched: {match['pattern']} ({match['severity']})",
            "",
            f"{_md_text(match['condition'])}.",
            "",
            *_md_evidence(match.get("evidence", []), number),
        ]
    lines += ["## Anomalies", ""]
    if anomalies:
        # Seed 002 `anomalies[]` entries as state.yaml writes them (the script pasted the raw
        # YAML); the stored id is a database key, not the seed's.
        block = dump_yaml([_md_anomaly(a) for a in anomalies])
        fence = "`" * max(3, 1 + max((len(r) for r in re.findall(r"`+", block)), default=0))
        lines += [f"{fence}yaml", block.rstrip("\n"), fence, ""]
    else:
        lines += ["None (the evidence is the tasks above).", ""]
    lines += ["## Human checklist", ""]
    lines += [f"- [ ] {_md_text(item)}" for item in report.get("checklist", [])]
    return "\n".join(lines) + "\n"


def _md_evidence(rows: list[dict[str, Any]], number: dict[Any, int]) -> list[str]:
    """The evidence table; anomalies by their number in the report's YAML below."""
    lines = ["| Shared value | Count | Tasks | Anomalies |", "|---|---|---|---|"]
    for row in rows:
        listed = [f"#{number[pk]}" for pk in row.get("anomalies", []) if pk in number]
        cells = [row.get("value", ""), row.get("count", ""), ", ".join(row.get("tasks", []))]
        cells = [_md_cell(cell) for cell in cells]
        lines.append(f"| {' | '.join(cells)} | {', '.join(listed) or '—'} |")
    return [*lines, ""]


def _md_anomaly(anomaly: dict[str, Any]) -> dict[str, Any]:
    try:
        timestamp: Any = p.parse_timestamp(anomaly.get("timestamp"))
    except (TypeError, ValueError):
        timestamp = anomaly.get("timestamp")
    details = anomaly.get("details")
    return {
        "timestamp": timestamp,
        "task": anomaly.get("task"),
        "reporter": anomaly.get("reporter"),
        "type": anomaly.get("type"),
        "details": _ordered(details, p.ANOMALY_REQUIRED_FIELDS.get(anomaly.get("type"), ())),
    }


def _md_text(value: Any) -> str:
    """Agents' text on one line: a newline would end the paragraph or the table row."""
    return " ".join(str(value).split())


def _md_cell(value: Any) -> str:
    return _md_text(value).replace("|", "\\|") or "—"
