"""Insights: reads over the event history — flow, cycle time, cost, the dependency graph, the
activity feed, time travel and the /metrics gauges — and their pages. Writes nothing."""
