"""Watch: what time makes due — the sweep (dead leases, stale reviews, deadlines, state
timeouts, alerts), the circuit breaker's patterns, and the escalation webhook's outbox and sender.
Above coordination (it acts through coordination's services), below the satellites."""
