"""Demo builders: the seeded projects of `manage.py liza_demo` and `.ci/serve` (a board with
history, the scripted team's project, the flow demo the watcher sweeps). Above the domains they
fill: they import files (interop), run the watcher (watch) and call coordination's services."""
