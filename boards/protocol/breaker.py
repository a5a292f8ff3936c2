"""The circuit breaker's tables: its patterns, their severities, what one reporter's anomalies
weigh (original-liza.md §2.7, specs/protocols/circuit-breaker.md).
"""

from __future__ import annotations

# The circuit breaker (original-liza.md §2.7, specs/protocols/circuit-breaker.md): each pattern
# with its one severity, in precedence order: when several match at once, the trigger names the
# LAST (liza-analyze.sh tests the six in this order and reports the last that matched); issue
# #11's review churn comes first so that it never hides one of the original's six.
BREAKER_PATTERNS: dict[str, str] = {
    "review_churn": "SCOPE_FLAW",
    "retry_cluster": "ARCHITECTURE_FLAW",
    "debt_accumulation": "SCOPE_FLAW",
    "assumption_cascade": "SPEC_FLAW",
    "workaround_pattern": "ARCHITECTURE_FLAW",
    "spec_gap_cluster": "SPEC_FLAW",
    "external_service_outage": "EXTERNAL_DEPENDENCY",
}
# What one reporter's anomalies weigh (issue #27, docs/decisions.md "Circuit breaker"): the
# patterns count distinct occurrences, so of one reporter's anomalies that share a pattern's
# value, at most BREAKER_PER_REPORTER count per BREAKER_REPORTER_WINDOW seconds; and one reporter
# logs at most ANOMALY_RATE_LIMIT anomalies per ANOMALY_RATE_WINDOW seconds (429 past it).
BREAKER_PER_REPORTER = 1
BREAKER_REPORTER_WINDOW = 60
ANOMALY_RATE_LIMIT = 20
ANOMALY_RATE_WINDOW = 60
# Severity classes and what the human does about each (circuit-breaker.md).
BREAKER_SEVERITIES: dict[str, str] = {
    "VISION_FLAW": "Stop: revisit the goal with the stakeholders before any more work.",
    "SCOPE_FLAW": "Pause: revise the requirements (rescope, split or abandon the tasks).",
    "SPEC_FLAW": "Pause: update the specs the evidence points at, and log the spec change.",
    "ARCHITECTURE_FLAW": "Pause: decide the design question and record it in a new ADR.",
    "TECH_STACK_FLAW": "Pause: reconsider the technology choice (no pattern yet).",
    "EXTERNAL_DEPENDENCY": "Halt and wait: the external service must be back before work resumes.",
}
