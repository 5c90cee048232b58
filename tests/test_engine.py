"""The engine on awkward input: encodings, line endings, broken files, crashing rules, random text."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perflint.engine import Linter
from perflint.rule import Rule, all_rules
from tests.conftest import SYNC_LOOP

LINTER = Linter(all_rules().values())
SYNC_RULES = Linter(r for c, r in all_rules().items() if c.startswith("PFL1"))


def codes_at(source, path="x.py"):
    """Findings of the sync rules (and the engine's own PFL001/PFL002)."""
    return sorted((f.line, f.col, f.code) for f in SYNC_RULES.lint_source(source, path))


def test_encoding_cookie_and_latin1_bytes():
    src = b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + SYNC_LOOP.encode()
    assert codes_at(src) == [(9, 18, "PFL101")]


def test_utf8_bom_crlf_and_tabs():
    src = ("\ufeff" + SYNC_LOOP.replace("    ", "\t")).replace("\n", "\r\n").encode("utf-8")
    assert codes_at(src) == [(7, 12, "PFL101")]  # a tab is one column, as in ruff


def test_empty_and_whitespace_only_files():
    assert codes_at(b"") == [] and codes_at(b"\n\n   \n") == []


def test_very_long_file():
    src = SYNC_LOOP + "x = 1\n" * 20_000 + SYNC_LOOP.replace("def train", "def train2")
    assert [c for c in codes_at(src)] == [(7, 18, "PFL101"), (20_015, 18, "PFL101")]


@pytest.mark.parametrize("source,line", [
    (b"import torch\nx = (\n", 2),
    (b"import torch\ndef f(:\n    pass\n", 2),
    (b"import torch\nx = 1\x00\n", 1),
    (b"import torch\n\xff\xfe garbage", 2),
    (b"# -*- coding: nonexistent -*-\nimport torch\n", 1),
])
def test_unparsable_input_is_pfl001(source, line):
    (finding,) = LINTER.lint_source(source, "bad.py")
    assert finding.code == "PFL001" and finding.line == line and finding.message.startswith("cannot ")


def test_a_file_that_is_not_pytorch_code_is_not_parsed():
    assert LINTER.lint_source(b"def f(:\n", "bad.py") == []  # no torch import: no torch findings, no parse


def test_deeply_nested_expression_does_not_crash():
    src = "import torch\nx = " + "(" * 200 + "1" + ")" * 200 + "\n" + "y = " + " + ".join(["a"] * 1500) + "\n"
    assert all(code == "PFL001" for _, _, code in codes_at(src))


class _Exploding(Rule):
    code = "PFL999"
    name = "exploding"
    summary = "raises on every call"

    def visit_Call(self, node, ctx):
        raise ValueError("boom")


def test_crashing_rule_becomes_pfl002_and_other_rules_still_run():
    linter = Linter([*all_rules().values(), _Exploding])
    found = [(f.code, f.message) for f in linter.lint_source(SYNC_LOOP, "x.py")]
    assert ("PFL002", "PFL999 (exploding) raised ValueError: boom") in found
    assert any(code == "PFL101" for code, _ in found)


def test_import_aliases_are_resolved():
    src = textwrap.dedent("""\
        import torch as T
        from torch import cuda
        from torch.nn import functional as F
        for x in loader:
            y = F.relu(x.to("cuda"))
            T.cuda.synchronize()
            y = F.relu(y)
            cuda.synchronize()
            y = F.relu(y)
            if y.any():
                pass
        """)
    assert codes_at(src) == [(6, 5, "PFL109"), (8, 5, "PFL109"), (10, 8, "PFL105")]


def test_shadowed_or_unimported_names_are_not_torch():
    src = "class torch:\n    pass\nfor i in range(3):\n    cuda.synchronize()\n"
    assert codes_at(src) == []


def test_functions_inside_loops_do_not_inherit_the_loop():
    src = "for i in range(3):\n    def f(t):\n        return t.item()\n"
    assert codes_at(src) == []


def test_for_iterable_is_evaluated_once():
    src = "for v in t.tolist():\n    pass\nxs = [v for v in t.tolist()]\n"
    assert codes_at(src) == []


SOURCE_CHARS = st.sampled_from(list("abt ()[]{}:.=+-*/%,\n\t#'\"\\0123456789") + ["for ", "if ", "while ",
                                                                                 ".item()", "torch.", "import "])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(SOURCE_CHARS, max_size=80).map("".join))
def test_random_text_never_raises(text):
    findings = LINTER.lint_source(text, "fuzz.py")
    assert all(f.line >= 1 and f.col >= 1 for f in findings)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_never_raise(data):
    LINTER.lint_source(data, "fuzz.py")


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 6), st.sampled_from(["loss.item()", "print(loss)", "float(loss)"]))
def test_finding_line_tracks_inserted_lines(blank, call):
    src = "\n" * blank + f"import torch\nfor x in loader:\n    loss = model(x.cuda())\n    v = {call}\n"
    (finding,) = SYNC_RULES.lint_source(src, "x.py")
    assert finding.line == blank + 4


def test_linter_runs_without_torch(tmp_path):
    """The linter (and everything `perflint` imports) must not need torch: block it and lint."""
    (tmp_path / "a.py").write_text(SYNC_LOOP)
    code = ("import sys; sys.modules['torch'] = None\n"
            "from perflint.cli import main\n"
            "rc = main(['--no-cache', '--output-format', 'sarif', '-o', 'out.sarif', 'a.py'])\n"
            "main(['--list-rules']); main(['--explain', 'PFL101'])\n"
            "assert not any(m == 'torch' or m.startswith('torch.') for m in sys.modules if sys.modules[m]), 'torch'\n"
            "sys.exit(rc)\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 1, r.stderr
    assert "PFL101" in (tmp_path / "out.sarif").read_text()


def test_positions_match_libcst_position_provider():
    from libcst.metadata import MetadataWrapper, PositionProvider

    from perflint.positions import node_ranges

    module = cst.parse_module(SYNC_LOOP.replace("\n", "\r\n") + 'x = """a\nb"""; y = (1,\n 2)\n')
    ours = node_ranges(module)
    theirs = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    assert {n: (r.start.line, r.start.column, r.end.line, r.end.column) for n, r in theirs.items()} == \
        {n: ours[n] for n in theirs}


@pytest.mark.parametrize("condition", ["step % 100 == 0", "i == 0", "0 == i", "step % k == 0 and rank == 0",
                                       "not (step % 10)"])
def test_logging_and_once_gates_are_quiet(condition):
    src = f"import torch\nfor i, x in enumerate(loader):\n    loss = model(x.cuda())\n    if {condition}:\n" \
          "        print(loss.item())\n"
    assert codes_at(src) == []


@pytest.mark.parametrize("condition", ["i > 0", "i != 0", "verbose"])
def test_other_conditions_do_not_gate(condition):
    src = f"import torch\nfor i, x in enumerate(loader):\n    loss = model(x.cuda())\n    if {condition}:\n" \
          "        v = loss.item()\n"
    assert [c for _, _, c in codes_at(src)] == ["PFL101"]


def test_positions_of_one_statement_match_the_whole_file():
    """Positions render only the statement that holds a finding (found through the blocks around it, with
    the stdlib parser's line numbers): every placed node must get the range a render of the whole file
    gives it."""
    from perflint.model.program import FileModel, Walker
    from perflint.positions import node_ranges, statement_ranges

    text = textwrap.dedent('''\
        import torch  # a comment


        @torch.no_grad()
        # between the decorator and the def
        def evaluate(model, loader,
                     device):
            """A docstring
            over lines."""
            total = 0; seen = 0
            for x, y in loader:

                # leading comment
                if x is None:
                    continue
                else:
                    out = model(x.to(device))
                with torch.autocast("cuda"):
                    loss = (out - y) \\
                        .abs().mean()
                try:
                    total += loss.item()
                except RuntimeError:
                    pass
                while seen < 3:
                    seen += 1
            return total


        class Net(torch.nn.Module):
            x: int = 1
            def forward(self, x):
                if not self.training: return x
                return x * 2 + 1
        ''')
    module = cst.parse_module(text)
    model = FileModel("t.py", module, None, text)
    Walker(model, {}, {}, {}).walk(module)
    whole = node_ranges(module)
    placed = [node for node in model.sites if node in whole and node is not module]
    assert len(placed) > 100
    for node in placed:
        path = model.statement_path(node)
        assert statement_ranges(module, text, [path])[node] == whole[node], (path, whole[node])
    assert any(len(model.statement_path(node)) >= 4 for node in placed)  # def > for > with > statement


# A rule's findings must not depend on which other rules run, so no answer of the model may depend on which
# question was asked first. Values that feed each other in a loop (`b = a * t; a = b + 1`) form a cycle; it
# is cut where the asking started, and an answer found with the cut somewhere else must not be kept.
CYCLE = """
import torch
def run(t, n):
    t = t.cuda()
    for i in range(n):
        b = a * t
        a = b + 1
"""


def _values_of(order):
    from perflint.model.program import FileModel, Walker
    from perflint.model.values import Values

    module = cst.parse_module(CYCLE)
    model = FileModel("t.py", module, None, CYCLE)
    Walker(model, {}, {}, {}).walk(module)
    model.walked()
    values = Values.of(model)
    reads = {"a": next(n for n in model.nodes(cst.Name) if n.value == "a"),  # in `b = a * t`
             "b": [n for n in model.nodes(cst.Name) if n.value == "b"][-1]}  # in `a = b + 1`
    answers = {name: values.value(reads[name]) for name in order}
    return {name: (v.kind, v.device) for name, v in answers.items()}


def test_an_answer_does_not_depend_on_which_question_came_first():
    assert _values_of("ab") == _values_of("ba")


ORDER = """
import torch
class Sampler(torch.nn.Module):
    def p_sample(self, x, t, gt, mask):
        mean, log_var = self.net(x, t)
        pred = mean + (0.5 * log_var).exp() * torch.randn_like(x)
        if mask is not None:
            pred = (mask * gt) + ((1 - mask) * pred)
        self.norms.append(pred.norm().item())
        return pred
    def sample(self, img, gt, mask):
        img = img.cuda()
        for t in reversed(range(1000)):
            img = self.p_sample(img, t, gt, mask)
            if t > 0:
                img = torch.sqrt(1 - self.beta[t]) * img + self.beta[t] * torch.randn_like(img)
        return img
"""


def test_a_rules_findings_do_not_depend_on_the_other_rules_selected():
    together = {}
    for f in LINTER.lint_source(ORDER, "sampler.py"):
        together.setdefault(f.code, []).append((f.line, f.message))
    assert together.get("PFL301") and together.get("PFL101")  # the case asks both families
    for code, rule in all_rules().items():
        alone = [(f.line, f.message) for f in Linter([rule]).lint_source(ORDER, "sampler.py") if f.code == code]
        assert alone == together.get(code, []), code


def test_a_linted_file_leaves_no_cycles_that_hold_its_tree():
    # The model breaks its own reference cycles when a file is done (FileModel.release), so the tree is freed
    # by reference counting; before, 3.76M objects of the speed corpus waited for the garbage collector.
    import gc

    src = textwrap.dedent("""
        import torch

        class Net(torch.nn.Module):
            def forward(self, x):
                return [y * 2 for y in x]

        def train(model, loader, opt):
            for x, y in loader:
                loss = model(x.cuda()).sum()
                loss.backward()
                opt.step()
                print(loss.item())
    """)
    linter = Linter(all_rules().values())
    assert [f.code for f in linter.lint_source(src, "train.py")]  # a file with findings, placed and fixed
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        linter.lint_source(src, "train.py")
        gc.collect()
        held = [o for o in gc.garbage if isinstance(o, cst.CSTNode) or type(o).__module__.startswith("perflint")]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert held == []


class _KeyErrorOnANode(Rule):
    code = "PFL998"
    name = "key-error-on-a-node"
    summary = "raises a KeyError whose text is a whole syntax tree"

    def visit_Call(self, node, ctx):
        raise KeyError(node)


def test_a_crash_whose_error_text_is_a_whole_node_is_reported_on_one_short_line():
    linter = Linter([*all_rules().values(), _KeyErrorOnANode])
    [message] = [f.message for f in linter.lint_source(SYNC_LOOP, "x.py") if f.code == "PFL002"]
    assert message.startswith("PFL998 (key-error-on-a-node) raised KeyError: ")
    assert "\n" not in message and len(message) < 300
