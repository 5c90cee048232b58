"""The vocabulary that `pytest_perf` and `perflint trace` share, in one place.

* `metrics`: every metric's name, unit, what it counts, how it is measured on a CPU and why it can be
  missing;
* `budgets`: the budget keys (`max_syncs`, ...), their parsing and checking into verdicts;
* `events`: the table from profiler events and Python calls to metrics and rules;
* `intervals`: interval arithmetic (busy time, overlap, gaps);
* `github`: GitHub workflow-command annotations, for every report that writes them.

Importing any of it imports no torch, numpy or libcst (interval functions import numpy when called), so
the linter, the pytest plugin at collection and the trace reader can all use it.
"""
