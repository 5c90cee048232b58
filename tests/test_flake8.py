"""The real flake8 runs perflint's rules through perflint/flake8_plugin.py, with flake8's own selection,
`# noqa` and configuration file.

When the `flake8.extension` entry point is installed flake8 finds the plugin by itself; otherwise the
sample project registers it in `[flake8:local-plugins]`, which needs no installation.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from importlib.metadata import entry_points

import pytest

from tests.expect import reported_fixtures

from perflint.engine import Linter
from perflint.rule import all_rules
from tests.conftest import SYNC_LOOP

pytest.importorskip("flake8", reason="flake8 is not installed (pip install flake8)")

INSTALLED = [ep for ep in entry_points(group="flake8.extension") if ep.name == "PFL"]
LOCAL_PLUGIN = "" if INSTALLED else "[flake8:local-plugins]\nextension =\n    PFL = perflint.flake8_plugin:Plugin\n"
OFF_BY_DEFAULT = next((r for r in all_rules().values() if not r.default and reported_fixtures(r.code)
                       and Linter([r]).lint_source(reported_fixtures(r.code)[0], "x.py")), None)


def flake8(project, *args, config: str = ""):
    (project / "setup.cfg").write_text(LOCAL_PLUGIN + "[flake8]\nselect = PFL\n" + config)
    r = subprocess.run([sys.executable, "-m", "flake8", *args], cwd=project, capture_output=True, text=True)
    assert r.returncode in (0, 1), r.stderr
    return r.returncode, r.stdout.splitlines()


def codes(lines):
    return [tuple(line.split()[0].rsplit(":", 3)[1:3]) + (line.split()[1],) for line in lines]


def test_entry_point_if_installed_names_the_plugin():
    assert all(ep.value == "perflint.flake8_plugin:Plugin" for ep in INSTALLED)


def test_pfl_codes_at_perflint_positions(project):
    (project / "a.py").write_text(SYNC_LOOP)
    code, lines = flake8(project, "a.py")
    assert code == 1 and lines == ["a.py:7:18: PFL101 " + lines[0].split("PFL101 ", 1)[1]]
    (finding,) = [f for f in Linter(all_rules().values()).lint_source(SYNC_LOOP, "a.py") if f.code == "PFL101"]
    assert lines[0].endswith(finding.message)


def test_flake8_noqa_applies_to_pfl_codes(project):
    src = SYNC_LOOP + textwrap.dedent("""\
        for t in loader:
            a = model(t.cuda(non_blocking=True)).item()  # noqa: PFL1
        for t in loader:
            b = model(t.cuda(non_blocking=True)).item()  # noqa: E501
        for t in loader:
            c = model(t.cuda(non_blocking=True)).item()  # noqa
        """)
    (project / "a.py").write_text(src.replace("total += loss.item()", "total += loss.item()  # noqa: PFL101"))
    code, lines = flake8(project, "a.py")
    assert codes(lines) == [("12", "9", "PFL101")]  # only the line whose noqa names another code
    (project / "b.py").write_text("# flake8: noqa\n" + SYNC_LOOP)
    assert flake8(project, "b.py") == (0, [])


def test_flake8_selection_and_ignores_from_its_config_and_command_line(project):
    (project / "a.py").write_text(SYNC_LOOP + "for t in loader:\n    sizes.append(model(t.cuda()).sum())\n")
    both = [("7", "18", "PFL101"), ("10", "24", "PFL203")]
    assert codes(flake8(project, "a.py")[1]) == both
    assert codes(flake8(project, "a.py", "--extend-ignore", "PFL101")[1]) == both[1:]
    assert codes(flake8(project, "a.py", config="extend-ignore = PFL203\n")[1]) == both[:1]
    assert codes(flake8(project, "a.py", "--select", "PFL203")[1]) == both[1:]
    assert codes(flake8(project, "a.py", config="per-file-ignores =\n    a.py: PFL1,PFL2\n")[1]) == []


@pytest.mark.skipif(OFF_BY_DEFAULT is None, reason="no rule is off by default")
def test_rule_off_by_default_runs_only_when_selected_by_name(project):
    rule = OFF_BY_DEFAULT
    (project / "a.py").write_text(reported_fixtures(rule.code)[0])
    assert rule.code not in {c for _, _, c in codes(flake8(project, "a.py")[1])}
    for selection in (["--extend-select", rule.code], ["--select", rule.code[:4]]):
        _, lines = flake8(project, "a.py", *selection)
        assert rule.code in {c for _, _, c in codes(lines)}, selection


def test_syntax_errors_are_flake8s_e999_not_pfl001(project):
    (project / "bad.py").write_text("def f(:\n    pass\n")
    (project / "a.py").write_text(SYNC_LOOP)
    code, lines = flake8(project, "--select", "E999,PFL", "-j", "2", "bad.py", "a.py")
    assert sorted(c for _, _, c in codes(lines)) == ["E999", "PFL101"]


def test_a_forward_no_loop_runs_is_left_out_as_perflint_leaves_it(project):
    # A module's forward that no loop of the file runs is only assumed to run every step (Finding.assumed):
    # perflint's default leaves such findings out, and so does the plugin.
    module = textwrap.dedent("""\
        import torch
        from torch import nn
        class Block(nn.Module):
            def forward(self, x):
                return torch.sigmoid(x) * x + 1.0
    """)
    (project / "model.py").write_text(module)
    assert flake8(project, "model.py", config="extend-select = PFL301\n") == (0, [])
    (project / "train.py").write_text(module + textwrap.dedent("""\
        block = Block().cuda()
        for x in loader:
            block(x.cuda(non_blocking=True)).sum().backward()
    """))
    assert codes(flake8(project, "train.py", config="extend-select = PFL301\n")[1]) \
        == [("5", "16", "PFL301"), ("6", "9", "PFL401")]
