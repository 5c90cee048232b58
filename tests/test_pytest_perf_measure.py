"""pytest_perf.measure: counts equal the profiler's table, attribution names the line, state is restored."""

import sys

import pytest

torch = pytest.importorskip("torch")

from perflint.measures.budgets import check, parse_budget  # noqa: E402
from pytest_perf import gpu  # noqa: E402
from pytest_perf.attribution import explain  # noqa: E402
from pytest_perf.measure import Recorder, measure  # noqa: E402
from pytest_perf.plan import Plan  # noqa: E402
from pytest_perf.profiler import ProfilerConflict  # noqa: E402

EVERYTHING = Plan.choose(set(), everything=True)


def line_of(fn, text):
    """Absolute line number of the first source line of fn containing text."""
    import inspect

    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def hits_by_line(result, metric):
    return {(site.line, site.api, rule): n for (m, site, rule), n in result.hits.items() if m == metric}


def assert_clean():
    """Nothing of pytest_perf is left behind: no profiler, no function mode, the original synchronize."""
    assert not torch._C._autograd._profiler_enabled()
    assert torch._C._len_torch_function_stack() == 0
    assert torch.cuda.synchronize.__module__ == "torch.cuda"


def items(x):
    for _ in range(100):
        x.sum().item()


def test_100_item_calls_are_100_syncs_as_in_the_profiler_table():
    x = torch.ones(4)
    res = measure(lambda: items(x))
    assert res.metrics["syncs"] == 100
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        items(x)
    table = {e.key: e.count for e in prof.key_averages()}
    assert table["aten::_local_scalar_dense"] == res.metrics["syncs"]
    assert res.op_counts["aten::_local_scalar_dense"] == 100
    assert hits_by_line(res, "syncs") == {(line_of(items, ".item()"), "Tensor.item", "PFL101"): 100}


def python_level(x):
    x.tolist()
    x.numpy()
    x.cpu()
    x.numpy(force=True)
    x.to("cpu")
    x.to(torch.float64)  # a dtype conversion: no transfer
    x.to("cpu", non_blocking=True)  # a transfer, not a sync
    try:
        torch.cuda.synchronize()
    except (AssertionError, RuntimeError):  # CPU-only build
        pass


def test_python_level_calls_the_cpu_profiler_cannot_see():
    x = torch.ones(8)
    res = measure(lambda: python_level(x))
    m = res.metrics
    # tolist, cpu, numpy(force=True), cuda.synchronize; `.numpy()` alone cannot copy, and `.to("cpu")`
    # of a host tensor is not a device-to-host copy
    assert m["syncs"] == 4
    # cpu, numpy(force=True), to("cpu"), to("cpu", non_blocking=True)
    assert m["transfers"] == 4 and m["transfer_bytes"] == 4 * 32
    rules = {(api, rule) for (line, api, rule) in hits_by_line(res, "syncs")}
    assert rules == {("Tensor.tolist", "PFL102"), ("Tensor.cpu", "PFL103"), ("torch.cuda.synchronize", "PFL109")}
    assert_clean()


def data_dependent(x):
    if x.sum() > 0:  # is_nonzero > item > _local_scalar_dense: one sync
        pass
    torch.masked_select(x, x > 0)  # contains an item() of its own: still one sync
    x[x > 0]
    torch.nonzero(x)
    x.unique()
    f"{x[0]}"


def test_nested_sync_ops_count_once_and_the_call_names_the_rule():
    x = torch.arange(6.0)
    res = measure(lambda: data_dependent(x))
    assert res.metrics["syncs"] == 6
    found = {api: (line, rule) for (line, api, rule) in hits_by_line(res, "syncs")}
    assert found["Tensor.__bool__"] == (line_of(data_dependent, "if x.sum()"), "PFL105")
    assert found["torch.masked_select"][1] == "PFL107"
    assert found["Tensor.__getitem__"][1] == "PFL107"
    assert found["torch.nonzero"][1] == "PFL107"
    assert found["Tensor.__format__"][1] == "PFL106"


def test_top_level_ops_and_nested_op_caps():
    a, b = torch.ones(3), torch.ones(3)

    def fn():
        for _ in range(10):
            a + b
        torch.stack([a, b])  # aten::stack calls aten::cat

    res = measure(fn, Plan.choose({"ops"}))
    assert res.metrics["ops"] == 11 and res.metrics["kernels"] == 11
    assert res.op_counts["aten::add"] == 10 and res.op_counts["aten::cat"] == 1
    assert res.metrics["syncs"] is None  # not asked, not measured: never a silent zero


def test_counts_are_deterministic_over_five_runs():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(16, 8)

    def step():
        for _ in range(5):
            loss = model(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss.item()

    step()  # lazy initialisation outside the measurement
    runs = [measure(step, EVERYTHING) for _ in range(5)]
    counts = [{k: v for k, v in r.metrics.items() if k != "peak_memory"} for r in runs]
    assert all(c == counts[0] for c in counts)
    assert all(r.op_counts == runs[0].op_counts for r in runs)
    assert counts[0]["syncs"] == 5


def test_steps_bin_counts_and_ignore_the_tail():
    x = torch.ones(2)
    rec = Recorder(EVERYTHING)
    rec.start()
    for i in range(4):
        for _ in range(i):
            x.sum().item()
        rec.mark_step()
    x.sum().item()  # after the last mark: in the total, in no step
    rec.stop()
    res = rec.result
    assert [s["syncs"] for s in res.steps] == [0, 1, 2, 3]
    assert res.worst_step()["syncs"] == 3
    assert res.metrics["syncs"] == 7


def test_explain_names_file_line_code_count_and_rule():
    x = torch.ones(4)
    res = measure(lambda: items(x))
    [verdict] = check(parse_budget({"max_syncs": 0}), res.metrics)
    text = explain(verdict, res.hits)
    assert text.startswith("syncs 100 > 0: ")
    assert f"test_pytest_perf_measure.py:{line_of(items, '.item()')} `x.sum().item()` (100x, PFL101)" in text


def test_peak_memory_sees_a_megabyte():
    res = measure(lambda: torch.zeros(1_000_000), Plan.choose({"peak_memory"}))
    assert res.metrics["peak_memory"] >= 4_000_000


def raises(exc):
    def fn():
        torch.ones(2).sum().item()
        raise exc

    return fn


@pytest.mark.parametrize("exc", [ValueError("boom"), KeyboardInterrupt()])
def test_state_is_restored_when_the_code_raises(exc):
    with pytest.raises(type(exc)):
        measure(raises(exc), EVERYTHING)
    assert_clean()


def test_a_running_profiler_is_a_clear_conflict():
    with torch.profiler.profile():
        with pytest.raises(ProfilerConflict, match="already running"):
            Recorder(EVERYTHING).start()
    assert torch._C._len_torch_function_stack() == 0


def test_the_code_starting_its_own_profiler_is_a_clear_conflict():
    def own_profiler():
        with torch.profiler.profile():
            torch.ones(2) + 1

    with pytest.raises(ProfilerConflict, match="started its own torch profiler"):
        measure(own_profiler, EVERYTHING)
    assert_clean()


def test_plan_keeps_the_function_mode_away_from_compile_budgets():
    assert Plan.choose({"graph_breaks"}, everything=True).sites is False
    assert Plan.choose({"graph_breaks", "syncs"}).sites is True
    assert Plan.choose(set(), everything=True) == Plan(sites=True, memory=False, compile=True)
    assert Plan.choose({"ops"}) == Plan(sites=False, memory=False, compile=False)


def test_graph_breaks_and_recompiles_with_their_lines():
    torch._dynamo.reset()

    def f(x):
        y = x.cos()
        if y.sum().item() > 0:
            y = y + 1
        return y.sin()

    compiled = torch.compile(f, backend="eager")
    res = measure(lambda: [compiled(torch.randn(n)) for n in (4, 5, 5)], Plan.choose({"graph_breaks", "recompiles"}))
    assert res.metrics["graph_breaks"] >= 1
    assert res.metrics["recompiles"] >= 1
    lines = {(m, site.line) for (m, site, rule), n in res.hits.items()}
    assert ("graph_breaks", line_of(f, ".item()")) in lines
    assert ("recompiles", f.__code__.co_firstlineno) in lines
    assert sys.modules["torch._dynamo.convert_frame"].get_and_maybe_log_recompilation_reasons.__module__ != __name__


def test_gpu_branch_glue_reads_perflint_trace_figures(monkeypatch):
    """The GPU branch cannot run here; its glue can: export, perflint.trace.metrics, merge (CPU trace)."""
    rec = Recorder(Plan.choose({"syncs"}, keep_trace=True))
    rec.start()
    torch.ones(3).sum().item()
    rec.stop()
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda *a, **k: 123)
    gpu.add_figures(rec.result.traces[0], rec.result)
    assert rec.result.metrics["peak_memory"] == 123
    assert rec.result.metrics["syncs"] == 1  # a CPU trace has no GPU syncs: the CPU count stays


def mnist_like_epochs(epochs=2):
    """The loops of pytorch/examples' mnist `train` and `test` (DataLoader, `.to(device)`, `loss.item()`
    every log_interval batches, two `.item()` per test batch) on 64 random rows."""
    import torch.nn.functional as F
    from torch.utils.data import DataLoader, TensorDataset

    g = torch.Generator().manual_seed(0)
    rows = TensorDataset(torch.randn(64, 1, 8, 8, generator=g), torch.randint(0, 10, (64,), generator=g))
    train_loader, test_loader = DataLoader(rows, batch_size=8, shuffle=True), DataLoader(rows, batch_size=16)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10), torch.nn.LogSoftmax(dim=1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def run():
        for _ in range(epochs):
            model.train()
            for batch_idx, (data, target) in enumerate(train_loader):
                data, target = data.to("cpu"), target.to("cpu")
                optimizer.zero_grad()
                loss = F.nll_loss(model(data), target)
                loss.backward()
                optimizer.step()
                if batch_idx % 4 == 0:
                    loss.item()  # the log line: batches 0 and 4 of 8
            model.eval()
            test_loss = correct = 0
            with torch.no_grad():
                for data, target in test_loader:
                    output = model(data)
                    test_loss += F.nll_loss(output, target, reduction="sum").item()
                    pred = output.argmax(dim=1, keepdim=True)
                    correct += pred.eq(target.view_as(pred)).sum().item()

    return run


def test_data_loading_is_not_a_sync_but_the_loops_items_are():
    res = measure(mnist_like_epochs(2))
    # per epoch: 2 logged losses + 4 test batches x 2; the loaders' seeds and permutations are host-side
    assert res.metrics["syncs"] == 2 * (2 + 4 * 2)
    assert {site.file for (m, site, rule) in res.hits if m == "syncs"} == {__file__}
    assert res.top_ops["aten::randperm"] == 2 * 2  # the sampler still ran: its ops count, its reads do not
