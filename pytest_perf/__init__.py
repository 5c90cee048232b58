"""pytest_perf: profiler budgets for PyTorch tests (`@pytest.mark.perf_budget`, `pytest --perf-budget`).

The plugin is registered through the `pytest11` entry point as `pytest_perf.plugin`. Measuring lives in
`measure` (no pytest import), verdicts come from `perflint.measures.budgets`, and reports from `report`.
"""
