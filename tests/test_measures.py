"""perflint.measures, the vocabulary the plugin and `perflint trace` share: light to import, one value
check for every budget, one GitHub escaping."""

import subprocess
import sys

import pytest

from perflint.measures import budgets, github, metrics
from perflint.measures.budgets import BudgetError, parse_budget


def imported_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", f"{code}\nimport sys; print(' '.join(sys.modules))"],
                         capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_the_vocabulary_imports_no_torch_numpy_or_libcst():
    loaded = imported_after("import perflint.measures.budgets, perflint.measures.events, "
                            "perflint.measures.metrics, perflint.measures.intervals, perflint.measures.github")
    assert {"torch", "numpy", "libcst"} & loaded == set()


def test_the_plugin_does_not_import_the_trace_reader():
    pytest.importorskip("torch")
    loaded = imported_after("import pytest_perf.plugin, pytest_perf.measure, pytest_perf.fixture")
    assert "torch" in loaded  # measure imports torch: the check below is not vacuous
    assert sorted(m for m in loaded if m.startswith("perflint.trace")) == []


def test_every_budget_key_names_a_metric_with_a_unit():
    for key in {**budgets.KEYS, **budgets.SCALING_KEYS}.values():
        assert metrics.METRICS[key.metric].unit in budgets.VALID
    assert set(budgets.BUDGET_METRICS) <= set(metrics.METRICS)


@pytest.mark.parametrize("text", ["inf", "nan", "-inf", "1e400"])
def test_perflint_trace_budget_rejects_non_finite_values_in_one_line(text, capsys):
    from perflint.trace.cli import main

    assert main(["no-such-trace.json", "--budget", f"max_syncs={text}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "max_syncs must be a finite number (a whole number >= 0)" in err


@pytest.mark.parametrize("values, message", [
    ({"max_syncs": float("inf")}, "max_syncs must be a finite number"),
    ({"min_overlap": float("nan")}, "min_overlap must be a finite number"),
    ({"max_transfer_bytes": float("inf")}, "max_transfer_bytes: cannot read size inf"),
    ({"max_peak_memory": -1}, "max_peak_memory: cannot read size -1"),
    ({"timeout": float("inf")}, "timeout must be a finite number of seconds"),
    ({"min_predicted_efficiency": {"min": 0.5, "world_size": 2, "link_gbps": float("inf"), "device_tflops": 1}},
     "must be a positive float, got inf"),
    ({"max_recompile": 0}, "did you mean 'max_recompiles'?"),
])
def test_one_value_check_for_every_budget(values, message):
    with pytest.raises(BudgetError, match=message.replace("(", r"\(").replace(")", r"\)").replace("?", r"\?")):
        parse_budget(values)


def test_github_annotation_escapes_message_and_properties():
    line = github.annotation("error", "50%\nmore", file="a,b/c:d.py", line=3, title="budget: x, y")
    assert line == "::error file=a%2Cb/c%3Ad.py,line=3,title=budget%3A x%2C y::50%25%0Amore"
    assert github.annotation("notice", "hi") == "::notice::hi"
