"""Coordination: the aggregate that locks together (project, goal, sprint, task, review,
event, alert, breaker state) and every protocol rule about it. The domain every other one
builds on; it imports none of them."""
