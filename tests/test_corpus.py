"""No crash on large real code.

Always: PyTorch's own sources that ship with the installed torch (torch/nn, torch/optim,
torch/utils/data, torch/profiler: about 79,000 lines). With PERFLINT_CORPUS=DIR: that folder too (the
benchmarks use pytorch/examples + pytorch-image-models, 147,571 lines).
"""

from __future__ import annotations

import ast
import os
import warnings
from pathlib import Path

import pytest

from perflint.engine import Linter
from perflint.rule import all_rules


def _torch_sources() -> list[Path]:
    spec = __import__("importlib.util").util.find_spec("torch")
    if spec is None or not spec.origin:
        return []
    root = Path(spec.origin).parent
    return sorted(p for d in ("nn", "optim", "utils/data", "profiler") for p in (root / d).rglob("*.py"))


def _check(files: list[Path]) -> None:
    linter = Linter(all_rules().values())
    crashed, unparsed = [], []
    for path in files:
        data = path.read_bytes()
        for f in linter.lint_source(data, str(path)):
            if f.code == "PFL002":
                crashed.append(f"{path}: {f.message}")
            elif f.code == "PFL001":
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        ast.parse(data)
                except SyntaxError:
                    continue  # really broken: PFL001 is right
                unparsed.append(f"{path}: {f.message}")
    assert crashed == [] and unparsed == []


def test_no_crash_on_pytorch_sources():
    files = _torch_sources()
    if not files:
        pytest.skip("torch is not installed")
    assert sum(p.read_bytes().count(b"\n") for p in files) > 50_000
    _check(files)


def test_no_crash_on_external_corpus():
    corpus = os.environ.get("PERFLINT_CORPUS")
    if not corpus:
        pytest.skip("set PERFLINT_CORPUS=DIR to lint a large external corpus")
    _check(sorted(Path(corpus).rglob("*.py")))
