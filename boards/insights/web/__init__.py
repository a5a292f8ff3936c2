"""The insights pages: insights and charts, graph, activity feed, /metrics."""
