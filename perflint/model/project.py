"""Facts about a file that come from the whole run: is it PyTorch code (it imports torch, or a module of
the linted project that does), does the project move work to a device, does it compile models anywhere.

A cheap text scan of every file (imports and a few words, no parse) answers these before linting, so
the files can still be linted one by one, in any process, and cached: the facts a file was linted with
are part of its cache key.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from perflint.model import torchapi as api

_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|(?:[^#\n;\\]|\\\n)*)"
                     r"|import[ \t]+([^#\n;]+))", re.MULTILINE)
_DEVICE_WORK = re.compile(r"\.cuda\(|[\"']cuda|\.to\([^)\n]*(?:device|dev\b|rank|gpu)|device\s*=|torch\.device\(")
# A call that compiles a model (not `@torch.jit.script` on a helper, not `re.compile`, not a mention in
# a string or a comment): `torch.compile(model)`, `model.compile()`, `torch.jit.script(model)`.
_COMPILE = re.compile(r"(?:\.compile|jit\.script|jit\.trace|_dynamo\.optimize|export\.export)\(")
# `torch.compile` as a value, applied later: `compile = (torch.compile if compile_model else lambda x: x)`.
_COMPILE_VALUE = re.compile(r"torch\.compile(?=[ \t]*(?:$|[),]|[ \t](?:if|else)\b))", re.MULTILINE)
_GUARD = re.compile(r"(?:if|elif)\s+(not\s+)?([\w.]+)\s*(?:==\s*True\s*)?:")
_TRUE_DEFAULTS = (re.compile(r"^[ \t]*(\w+)\s*(?::\s*bool)?\s*=\s*True\b", re.MULTILINE),
                  re.compile(r"add_argument\(\s*['\"]-{1,2}([\w-]+)['\"][^)]*?default\s*=\s*True"),
                  re.compile(r"add_argument\(\s*['\"]--no[-_]([\w-]+)['\"][^)]*?store_false"))
_CUSTOM_TO = re.compile(r"^[ \t]+def to\(self", re.MULTILINE)
_DEFAULT_DEVICE = re.compile(r"set_default_device\(\s*(?![\"']cpu)|set_default_tensor_type\([^)]*cuda")
_DEFINES = re.compile(r"^(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.MULTILINE)
_CLASS = re.compile(r"^class[ \t]+(\w+)", re.MULTILINE)
_NEXT_TOP_LEVEL = re.compile(r"\n(?=[^\s#)])")
_INIT_MODEL = re.compile(r"def __init__\(\s*self\s*,\s*(\w+)")
_SUBCLASS = re.compile(r"^class[ \t]+(\w+)[ \t]*\(([\w., \t]+)\)[ \t]*:", re.MULTILINE)
_TEST_NAME = re.compile(r"(?:^test_.*|.*_test|^conftest)\.(?:py|ipynb)$")
# Names that hold a program's options: a parsed command line (`args.lr`), or a config tree of the yacs or
# detectron2 kind (`cfg.SOLVER.BASE_LR`, its defaults set as `_C.SOLVER.BASE_LR = 0.1` in a defaults file).
OPTION_HOLDERS = frozenset({"args", "opt", "opts", "options", "flags", "FLAGS", "cli_args", "hparams", "argv_args",
                            "cfg", "config"})
OPTION_HOLDER_ENDINGS = ("_config", "_cfg")  # `self.policy_config.num_discrete_actions`
# A settings class (`@dataclass class SACConfig:`, `class NeoXArgs:`): its fields' literal defaults are options.
# Looked for first with a literal start (fast), then anchored at a line start.
_SETTINGS_NAME = re.compile(r"class[ \t]+\w*(?:Config|Cfg|Args|Arguments|Options|Settings|Params)\b")
_SETTINGS_CLASS = re.compile(rf"^{_SETTINGS_NAME.pattern}[^\n]*:[ \t]*$", re.MULTILINE)
_FIELD = re.compile(r"""^([ \t]+)(\w+)[ \t]*(?::[^=\n]+)?=[ \t]*(True|False|None|-?\d+(?:\.\d*)?(?:[eE]-?\d+)?|"""
                    r"""'[^'\\\n]*'|"[^"\\\n]*")[ \t]*(?:#.*)?$""", re.MULTILINE)
# `name=` after `(` or `,`: a keyword argument or a parameter's default, with its annotation and, when it is
# one, the boolean given. Names given a boolean are the candidates for flag parameters (`return_list=False`,
# `return_list: bool = False`); unannotated ones are what a file may pass (`return_list=True`). Starting at
# `(` or `,` lets the regex engine skip ahead (4x faster than at every word), and one pass finds both.
_KEYWORD = re.compile(r"[(,]\s*(\w+)[ \t]*(:[^=\n()]*)?=(?!=)[ \t]*(True\b|False\b)?")
_PUNCTUATION = re.compile(r"[()\[\]{},]")
_ADD_ARGUMENT = re.compile(r"\.add_argument\(")
_ABSL_FLAG = re.compile(r"""\bDEFINE_(?:bool|boolean|integer|float|string|enum)\(\s*['"](\w+)['"]\s*,\s*([^,()\n]+?)\s*[,)]""")
_FLAG = re.compile(r"""^\s*(?:['"]-[\w-]*['"]\s*,\s*)*['"]--([\w-]+)['"]""")
_DEST = re.compile(r"""\bdest\s*=\s*['"](\w+)['"]""")
_STORE = re.compile(r"""\baction\s*=\s*['"](store_true|store_false)['"]""")
_DEFAULT = re.compile(r"""\bdefault\s*=\s*(True|False|None|-?\d+(?:\.\d*)?(?:[eE]-?\d+)?|'[^'\\\n]*'|"[^"\\\n]*")\s*[,)]""")
_ANY_DEFAULT = re.compile(r"\bdefault\s*=")
# `_C.MIXUP.ENABLE = False` (yacs, detectron2; `__C` in older code): a config default, read as `cfg.MIXUP.ENABLE`.
_CONFIG_DEFAULT = re.compile(r"""^[ \t]*__?C((?:\.\w+)+)[ \t]*=[ \t]*(True|False|None|-?\d+(?:\.\d*)?(?:[eE]-?\d+)?|"""
                             r"""'[^'\\\n]*'|"[^"\\\n]*")[ \t]*(?:#[^\n]*)?$""", re.MULTILINE)
_OPTION_PATH = re.compile(r"\w+(?:\.\w+)*")
# Objects of settings built from keywords (`tf.contrib.training.HParams(distributed_run=False, ...)`).
_SETTINGS_CLASSES = ("HParams", "Namespace", "SimpleNamespace", "EasyDict", "edict", "AttrDict")
_SETTINGS = re.compile(r"\b(?:" + "|".join(_SETTINGS_CLASSES) + r")\(")
_SETTING = re.compile(r"""^\s*(\w+)\s*=\s*(True|False|None|-?\d+(?:\.\d*)?(?:[eE]-?\d+)?|'[^'\\\n]*'|"[^"\\\n]*")\s*$""")
_TOP_DEF = re.compile(r"^def[ \t]+(\w+)[ \t]*\(", re.MULTILINE)
_RETURN = re.compile(r"^[ \t]+return\b(.*)$", re.MULTILINE)
_READ_BACK = re.compile(r"\.(?:item|tolist|numpy)\(\)")
_TOP_LEVEL_LINE = re.compile(r"^[^\s#)]", re.MULTILINE)
# Top-level lines of a module that only defines: imports, definitions, decorators, docstrings, assignments,
# `try:` around an import, closing brackets. Anything else (a call, a loop, an `if`) is code that runs.
_DEFINING = re.compile(r"""(?:import|from|def|class|async|try|except|else|finally)\b|@|['"rbuf]*['"]|[\]})]|"""
                       r"""if\s+(?:typing\.)?TYPE_CHECKING\b|"""
                       r"""[\w.]+(?:\s*\[[^\]\n]*\])?\s*(?::[^=\n]*)?(?:,\s*[\w.]+)*\s*=(?!=)""")
# Not `exec(`: what it runs is a string of code (a setup.py's `exec(open("pkg/version.py").read())`, yolov5's
# `exec(s, {"yaml": data})`) or a file of the run, whose own imports the scan of that file sees.
_DYNAMIC_IMPORTS = ("import_module(", "__import__(", "spec_from_file_location", "load_source(", "runpy.")
_ENTRY_NAMES = ("__init__.py", "setup.py", "hubconf.py", "conftest.py", "__main__.py")
UNKNOWN = "<unknown>"  # an option whose default a text scan cannot read, or that two declarations disagree on


@dataclass(frozen=True)
class FileFacts:
    """What the run knows about one file beyond its own text."""

    torch: bool = True  # PyTorch code: rules about torch apply
    test_file: bool = False  # test_*.py, *_test.py, conftest.py, or below a tests/ folder
    device_work: bool = True  # the project moves work to an accelerator somewhere
    compiles: bool = False  # its program compiles a model somewhere, perhaps behind a flag
    compiled_by_default: bool = False  # ... and does so on its default path (no flag, or a flag that is on)
    default_device: bool = False  # this file sets the default device: factories may not make host tensors
    custom_to: bool = False  # its program defines a `to()` method of its own (a batch class such as NestedTensor)
    # Its program differentiates twice somewhere (`create_graph=True`: an R1 or WGAN-GP penalty in a trainer
    # file), which torch.compile does not support.
    double_backward: bool = False
    # Its program builds layers from a compiled extension library (`api.EXTENSION_LAYERS`): compiling its models
    # would break the graph at each of them.
    extension_layers: bool = False
    # Its imports that load a file of the run, as "level:module" (`from ..util import box_ops` -> "2:util"):
    # calls through them are the calls out that model/crossfile.py follows.
    local_imports: frozenset[str] = frozenset()
    # Command-line options it reads (`self.args.use_multi_gpu`) that it or another file of its program
    # declares, with their defaults as literal text: (("use_multi_gpu", "False"), ...).
    options: tuple[tuple[str, str], ...] = ()
    # Its top-level classes and functions that nothing in the program names (`class CrossEntropyLabelSmooth`
    # that the training scripts never use, a `train()` left over in a module whose `get_filter` alone is
    # imported): their code never runs.
    unused_defines: frozenset[str] = frozenset()
    # Top-level functions it defines or imports from another file of the run that end by reading a value back
    # to the host (`from utils import accuracy`, whose `return correct.item() * ...`): calling one is a wait.
    read_backs: frozenset[str] = frozenset()
    # Timing helpers it defines or imports from another file of the run that wait for the device (see
    # `_synchronizers`): `time_sync`, and `Profile()` for a context manager.
    synchronizers: frozenset[str] = frozenset()
    # A module of the program that nothing runs: it only defines, no file of the run imports it, and the run
    # holds the files that import its neighbours (`vocoder/models/deepmind_version.py` beside the imported
    # `fatchord_version.py`). Nothing in it runs every step.
    unused: bool = False
    # Classes it defines or imports from another file of the run that keep the model they are built with and
    # run a method of it other than `forward` (`DDIMSampler(model)`, whose steps call `model.apply_model`):
    # (("DDIMSampler", "apply_model"), ...); "" for one that calls none.
    runners: tuple[tuple[str, str], ...] = ()
    # Module classes it defines or imports from another file of the run not worth compiling: one `nn.Linear`
    # (a linear probe's `LinearClassifier`), no layer at all (a memory bank of buffers), a `forward` that
    # takes a training step itself (MAML's `Meta`), layers that multiply by a sparse matrix (a GCN), or cuDNN RNNs
    # and no convolution.
    not_worth_compiling: frozenset[str] = frozenset()
    # Names of its boolean parameters (`def generate(..., return_list=False)`) that another file of its program
    # may pass by keyword (it writes `return_list=` somewhere); None when the run holds no other file of the
    # program. A flag no file passes has its default wherever the file has no call of the function.
    flags_passed: frozenset[str] | None = None
    # Its top-level names that another file of the run imports by name (`from mem_transformer import
    # MemTransformerLM`); None when one imports the module whole (`import utils`, `from utils import *`) or
    # dynamically, so that any of its names may be used elsewhere.
    named_elsewhere: frozenset[str] | None = None

    def key(self) -> str:
        flags = "".join("1" if v else "0" for v in (self.torch, self.test_file, self.device_work, self.compiles,
                                                     self.compiled_by_default, self.default_device, self.custom_to,
                                                     self.unused, self.double_backward, self.extension_layers))
        options = ",".join(f"{n}={v}" for n, v in self.options)
        runners = ",".join(f"{n}={m}" for n, m in self.runners)
        passed = "-" if self.flags_passed is None else ",".join(sorted(self.flags_passed))
        return (f"{flags}:{','.join(sorted(self.local_imports))}:{options}:{','.join(sorted(self.read_backs))}:"
                f"{','.join(sorted(self.synchronizers))}:"
                f"{','.join(sorted(self.unused_defines))}:{runners}:{passed}:{','.join(sorted(self.not_worth_compiling))}:"
                f"{'-' if self.named_elsewhere is None else ','.join(sorted(self.named_elsewhere))}")

    @staticmethod
    def alone(text: str = "", path: str = "") -> "FileFacts":
        """The facts of a file linted on its own: everything comes from its text."""
        scan = Scan(path, text, run=False)
        return FileFacts(torch=scan.torch_direct or not text, test_file=is_test_path(path),
                         device_work=scan.device_work or not text, compiles=bool(scan.compile_guards),
                         compiled_by_default=scan.compiled_by_default(scan.true_defaults),
                         options=_read_options(scan, {}), read_backs=scan.read_backs,
                         synchronizers=scan.synchronizers,
                         default_device=scan.default_device, custom_to=scan.custom_to,
                         extension_layers=scan.extension_layers,
                         runners=tuple(sorted(scan.runners.items())), not_worth_compiling=scan.not_worth_compiling)


def declares_distribution(root: Path) -> bool:
    """Whether the project at `root` can be installed (setup.py, setup.cfg, or a pyproject.toml with a
    [project], [build-system] or [tool.poetry] table): then code outside it may import its packages."""
    if (root / "setup.py").is_file() or (root / "setup.cfg").is_file():
        return True
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return any(table in text for table in ("[project]", "[build-system]", "[tool.poetry]"))


def is_test_path(path: str) -> bool:
    """test_*.py, *_test.py, conftest.py, a file below tests/ or test/, or one whose name is made of words
    one of which is test, tests or testing (numerical_tests_qwen.py, parity_testing.py)."""
    parts = PurePosixPath(path.replace("\\", "/")).parts
    if not parts:
        return False
    words = set(re.split(r"[_.\-]+", parts[-1].lower()))
    return bool(_TEST_NAME.match(parts[-1])) or any(p in ("tests", "test") for p in parts[:-1]) \
        or bool(words & {"test", "tests", "testing"})


_SET_ASIDE = frozenset({"backup", "backups", "deprecated", "obsolete", "archive", "archived", "unused", "attic"})


def set_aside(path: str) -> bool:
    """A file below a folder that keeps copies out of the run (`backup/csmlv0.py`, `deprecated/`); not `legacy/`
    or `old/`, which often hold examples that still run."""
    return any(p.lower() in _SET_ASIDE for p in PurePosixPath(path.replace("\\", "/")).parts[:-1])


class Scan:
    """The imports and a few telling words of one file's text."""

    __slots__ = ("path", "imports", "unused_imports", "torch_direct", "xla", "other_framework", "bases", "device_work",
                 "compile_guards", "true_defaults", "default_device", "custom_to", "defines", "options", "option_reads",
                 "read_backs", "runs_code", "dynamic_imports", "lone_defines", "runners", "not_worth_compiling", "flags", "assigned",
                 "double_backward", "synchronizers", "extension_layers")

    def __init__(self, path: str, text: str, run: bool = True) -> None:
        """`run`: the file is one of a run's, so the options it reads are scanned even where it declares none
        (another file may); a file linted alone skips that."""
        self.path = path
        self.imports: list[tuple[int, str, tuple[str, ...]]] = []  # (level, module, names)
        # Names it imports by name (`from engine import evaluate, test`) and never writes again: DINO's main.py
        # imports `test` and calls only the other two. (Not those imported `as` another name.)
        self.unused_imports: set[str] = set()
        heads = set()
        words = _Words(text)
        for m in _IMPORT.finditer(text):
            if m.group(3) is not None:
                for part in m.group(3).split(","):
                    name = part.strip().split(" as ")[0].strip()
                    if name and re.fullmatch(r"[\w.]+", name):
                        self.imports.append((0, name, ()))
                        heads.add(name.split(".")[0])
            else:
                module = m.group(1)
                level = len(module) - len(module.lstrip("."))
                parts = [n.strip() for n in m.group(2).replace("\\\n", " ").strip("()").split(",")]
                names = tuple(n.split(" as ")[0].strip() for n in parts)
                names = tuple(n for n in names if re.fullmatch(r"\w+", n))
                self.imports.append((level, module.lstrip("."), names))
                if run and not path.endswith("__init__.py"):  # (a package's `__init__.py` re-exports what it imports)
                    self.unused_imports.update(n for n in parts if re.fullmatch(r"\w+", n) and words[n] == 1)
                if level == 0 and module:
                    heads.add(module.split(".")[0])
        self.defines = set(_DEFINES.findall(text))  # top-level functions and classes
        # Each top-level class's bases as written (`class UniformSampler(ScheduleSampler):`), for methods inherited
        # within the file.
        self.bases = {m.group(1): [b.strip().rsplit(".", 1)[-1] for b in m.group(2).split(",")]
                      for m in _SUBCLASS.finditer(text)}
        # torch_xla's lazy tensors run as graphs cut at `mark_step()`: the CUDA stream's syncs and copies that the
        # rules reason about do not happen there, so such a file is not linted as eager PyTorch.
        self.xla = "torch_xla" in heads
        self.torch_direct = bool(heads & api.TORCH_PACKAGES) and not self.xla
        self.other_framework = bool(heads & api.OTHER_FRAMEWORKS)
        self.device_work = bool(_DEVICE_WORK.search(text))
        self.default_device = bool(_DEFAULT_DEVICE.search(text))
        self.custom_to = bool(_CUSTOM_TO.search(text))
        self.double_backward = "create_graph=True" in text
        self.extension_layers = bool(heads & api.EXTENSION_LAYERS)
        # Each compile call and the flag it sits under (None: it always runs).
        self.compile_guards: list[tuple[str | None, bool]] = []
        calls = []  # (row, indent) of each compile call, found by token then checked on its own line
        found = [*_COMPILE.finditer(text)] if "compile(" in text or "jit." in text or "export(" in text \
            or "optimize(" in text else []
        if "torch.compile" in text:
            found += _COMPILE_VALUE.finditer(text)
        for m in found:
            if text.endswith(("re", "regex"), 0, m.start()):
                continue  # `re.compile(...)`
            start = text.rfind("\n", 0, m.start()) + 1
            end = text.find("\n", m.end())
            line = text[start:end if end != -1 else len(text)]
            before = text[start:m.start()]
            if line.rstrip().endswith("(") and end != -1:  # `torch.compile(` with its argument on the next line
                following = text.find("\n", end + 1)
                line += text[end:following if following != -1 else len(text)].strip()
            if "#" in before or before.count('"') % 2 or before.count("'") % 2 \
                    or m.group(0).endswith("(") and not _compiles_a_model(line):
                continue  # in a comment or a string, or compiling a helper rather than a model
            calls.append((text.count("\n", 0, start), len(line) - len(line.lstrip())))
        if calls:
            lines = text.splitlines()
            entry = "__main__" in text
            for row, indent in calls:
                self.compile_guards.append(_guard(lines, row, indent, entry))
        if any(module.split(".")[0] == "transformers" and _HF_TRAINER & set(names)
               for _, module, names in self.imports) and any(_HF_TRAINER & set(b) for b in self.bases.values()):
            # A trainer built on transformers' `Trainer` (trl's): its `TrainingArguments.torch_compile` flag
            # compiles the model it prepares, so compile advice there is a flag the user already has.
            self.compile_guards.append(("torch_compile", False))
        if any(b == "ScriptModule" for bases in self.bases.values() for b in bases):
            self.compile_guards.append((None, False))  # `class TransitionModel(jit.ScriptModule)`: TorchScript
        self.true_defaults = {n.replace("-", "_") for pattern in _TRUE_DEFAULTS for n in pattern.findall(text)} \
            if calls or "True" in text else set()
        self.options = _declared_options(text) if "add_argument(" in text or "_C." in text or "DEFINE_" in text or any(
            f"{w}(" in text for w in _SETTINGS_CLASSES) or "class " in text and \
            _SETTINGS_NAME.search(text) and _SETTINGS_CLASS.search(text) else {}
        self.option_reads = _option_reads(text) if run or self.options else set()
        if run and "self." in text:  # `self.neighbor_pooling_type = neighbor_pooling_type`: an option handed in
            self.option_reads |= set(_MIRRORED.findall(text))
        self.read_backs = _read_backs(text) if ".item()" in text or ".tolist()" in text or ".numpy()" in text \
            else frozenset()
        self.synchronizers = _synchronizers(text) if "synchronize(" in text else frozenset()
        # Whether importing or running it does anything beyond defining: a script, a `__main__` guard.
        self.runs_code = "__main__" in text or any(
            not _DEFINING.match(text, m.start()) for m in _TOP_LEVEL_LINE.finditer(text)) if run else True
        self.dynamic_imports = any(w in text for w in _DYNAMIC_IMPORTS) if run else True  # substrings: fast
        # Undecorated top-level classes and functions whose name the file writes only on the `class`/`def` line
        # (and in `super(Name, self)`): none of its own code uses them (a subclass, a call, an `__all__` entry
        # would name them again).
        self.lone_defines = _lone_defines(text, words) if run else frozenset()
        self.runners = _runners(text) if "def __init__(self" in text else {}
        self.not_worth_compiling = _not_worth_compiling(text) if "Module)" in text else frozenset()
        # Names given a boolean, and names passed as keywords (only for a run: a file linted on its own knows
        # nothing of its callers).
        keywords = _KEYWORD.findall(text) if run else ()
        self.flags = frozenset(name for name, _, given in keywords if given)
        self.assigned = frozenset(name for name, annotation, _ in keywords if not annotation)

    def compiled_by_default(self, true_defaults: set[str]) -> bool:
        """Whether one of its compile calls runs without a flag, or under a flag that defaults to on."""
        return any(name is None or name != _LIBRARY and (name in true_defaults) != negated
                   for name, negated in self.compile_guards)


_BLOCKS = ("if ", "elif ", "else", "for ", "while ", "with ", "try", "except", "finally", "def ", "async ",
           "class ", "match ", "case ")
_MODEL_WORDS = ("model", "net", "module", "backbone", "encoder", "decoder", "student", "teacher", "policy", "agent",
                "transformer", "generator", "discriminator", "actor", "critic", "task", "layer", "block", "unet")


class _Words:
    """How often a text writes each word of its own (not an attribute: `(?<![.\w])\w+`), counted once, on
    the first question, for all of them: one pass instead of one per name asked."""

    __slots__ = ("text", "counts")

    def __init__(self, text: str) -> None:
        self.text, self.counts = text, None

    def __getitem__(self, name: str) -> int:
        found = self.text.count(name)
        if found <= 1:  # (fast, and most names asked about are written more than once)
            return found
        if self.counts is None:
            self.counts = Counter(_WORD.findall(self.text))
        return self.counts[name]


_WORD = re.compile(r"(?<![.\w])\w+")


# Decorators that register nothing (a registry's, `@MODELS.register_module()`, would make a name used).
_NO_REGISTRY = re.compile(r"@\s*torch\.(?:no_grad|inference_mode|enable_grad)\(\)\s*$")


def _lone_defines(text: str, words: _Words) -> frozenset[str]:
    """Top-level classes and functions without a decorator (a registry's would name them; `@torch.no_grad()`
    is no registry) whose name the text
    writes only on the `class`/`def` line (as a word of its own, not an attribute), `super(Name, self)` aside."""
    found = set()
    for m in _DEFINES.finditer(text):
        name = m.group(1)
        before = text.rfind("\n", 0, max(m.start() - 1, 0))
        decorator = text[before + 1: m.start()].lstrip()
        if decorator.startswith("@") and not _NO_REGISTRY.match(decorator):
            continue
        supers = text.count(f"super({name}")
        count = text.count(name) - supers
        if count == 1 or words[name] - supers == 1:
            found.add(name)  # `def train(` beside `model.train()` and `train_loader`
    return frozenset(found)


_PROSE = re.compile(r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|#[^\n]*')  # docstrings and comments


def _runners(text: str) -> dict[str, str]:
    """Top-level classes named like a loop that runs a model (`DDIMSampler`, `Trainer`) that keep the model
    they are built with (`def __init__(self, model, ...): self.model = model`) and never call it: the
    method of it they call most (`self.model.apply_model(...)`; "forward" when they call only that, which
    bypasses an in-place compile), or "" when they call none. A class that
    calls the model, hands it on or uses it any other way is left out: it runs the model's `forward`."""
    found = {}
    for m in _CLASS.finditer(text):
        name = m.group(1)
        if not any(w in name.lower() for w in api.RUNNER_WORDS):
            continue
        body = _PROSE.sub("", _top_level_block(text, m.end()))  # not the docstring's "wraps a trained model"
        init = _INIT_MODEL.search(body)
        if init is None or len(re.findall(rf"(?<![.\w]){init.group(1)}\b(?!\.\w+\b(?!\s*\())", body)) != 2:
            continue  # the model is used beyond the one assignment that keeps it (and reads of its attributes)
        kept = re.findall(rf"self\.(\w+)[ \t]*=[ \t]*{init.group(1)}[ \t]*(?:#.*)?$", body, re.MULTILINE)
        if len(kept) != 1:
            continue
        uses = re.findall(rf"self\.{kept[0]}\b(\.\w+\s*\(|\.\w+|.?)", body)
        methods = [u[1:].rstrip("( \t\n") for u in uses if u.startswith(".") and u.endswith("(")]
        methods = [m for m in methods if m not in api.MODULE_API_METHODS]
        others = [u for u in uses if not u.startswith(".")][1:]  # past the assignment
        if any(u not in ",)" or not u for u in others) or others and not methods \
                or "forward" in methods and set(methods) != {"forward"}:
            continue  # called (`self.model(x)`), aliased, or only handed on (`f(self.model)`): its forward may run
        # Only `self.model.forward(...)` (BERT-pytorch's trainer): an in-place `model.compile()` would not reach it.
        # Handed on beside the calls of a method (`score_corrector.modify_score(self.model, ...)`): the method
        # is what runs every step.
        found[name] = max(methods, key=methods.count) if methods else ""
    return found


# Layers with nothing to fuse between them: a module of only these (`nn.Sequential(nn.Dropout(p), nn.Linear(d,
# 3))`, a linear probe's `self.fc = nn.Linear(feat_dim, n)`) is one matmul and its bias, already one kernel each.
PROJECTION_LAYERS = frozenset({"Dropout", "Linear", "Identity", "Flatten"})
_BUILT = re.compile(r"\b([A-Za-z_][\w.]*)\(")
_RNN_LAYERS = frozenset({"LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell"})
_MIRRORED = re.compile(r"^[ \t]+self\.(\w+)[ \t]*=[ \t]*\1[ \t]*(?:#.*)?$", re.MULTILINE)
_INIT = re.compile(r"^([ \t]+)def __init__\(.*?(?=\n\1(?:def |@)|\Z)", re.DOTALL | re.MULTILINE)
_FORWARD = re.compile(r"^([ \t]+)def forward\(.*?(?=\n\1(?:def |@)|\Z)", re.DOTALL | re.MULTILINE)
_TRAINS = re.compile(r"\.backward\(|autograd\.grad\(|optim\w*\.step\(")  # a training step: not a model's forward
_STORED = re.compile(r"self\.\w+[ \t]*=[ \t]*(\w+)[ \t]*(?:#.*)?$", re.MULTILINE)  # `self.model = model`
_KEPT = re.compile(r"self\.\w+[ \t]*=[ \t]*([A-Za-z_][\w.]*)\(")
_CONTAINERS = ("Module", "Sequential", "ModuleList")
_PLAIN_MODULE = re.compile(r"\((?:torch\.)?(?:nn\.)?Module\)")  # the rest of a `class X(nn.Module):` line


def _not_worth_compiling(text: str) -> frozenset[str]:
    """Top-level module classes that build one linear layer and nothing else to compute with (`class
    LinearClassifier(nn.Module)`, a linear probe), or, straight from `nn.Module`, no layer at all (a memory
    bank of buffers: a gather and a matmul): compiling one alone gains nothing measurable. Also a module whose
    `forward` is a whole training step (MAML's `Meta`: `autograd.grad`, `backward()` and an optimizer step
    inside): Dynamo breaks its graph at each, and what runs in it is the learner's own model. And every module
    of a file that multiplies by a sparse matrix (`torch.spmm(adj, h)`, `torch.sparse.mm`: GCN layers):
    torch.compile does not support sparse tensors (measured on 2.13: "Attempted to wrap sparse Tensor", a
    graph break), so the model would stay eager around its main op."""
    found = set()
    builds: dict[str, list[str]] = {}  # the layers each class's `__init__` builds
    sparse = "spmm(" in text or "sparse.mm(" in text
    for m in _CLASS.finditer(text):
        header = text[m.end(): text.find("\n", m.end())]
        if "Module" not in header:
            continue
        if sparse:  # a graph network's layers multiply by a sparse adjacency: Dynamo breaks the graph there
            found.add(m.group(1))
            continue
        body = _top_level_block(text, m.end())
        forward = _FORWARD.search(body)
        if forward is not None and _TRAINS.search(forward.group(0)):
            found.add(m.group(1))
            continue
        init = _INIT.search(body)  # up to the next method (a `def block(...)` nested in it is part of it)
        if init is None:
            continue
        built = [b.rsplit(".", 1)[-1] for b in _BUILT.findall(init.group(0))]
        layers = [b for b in built if b[:1].isupper() and b not in _CONTAINERS]
        builds[m.group(1)] = layers
        kept = [b.rsplit(".", 1)[-1] for b in _KEPT.findall(init.group(0))]  # `self.encoder = model_fun()`
        if layers.count("Linear") == 1 and all(b in PROJECTION_LAYERS for b in layers) \
                and all(b in PROJECTION_LAYERS or b in _CONTAINERS for b in kept):
            found.add(m.group(1))  # one matmul (an MLP's several, with activations between, fuse and launch less)
        elif not layers and not kept and _PLAIN_MODULE.match(header) and "add_module" not in init.group(0) \
                and "setattr" not in init.group(0) and not any(
                    any(w in name.lower() for w in (*_MODEL_WORDS, "loss", "criterion"))
                    for name in _STORED.findall(init.group(0))):
            found.add(m.group(1))  # no layers at all: a memory bank's buffers (not `self.model = model`)
    # Built around cuDNN RNNs, directly or through classes of this file (sgan's `TrajectoryGenerator` of an
    # `Encoder` and a `Decoder`, each an `nn.LSTM`), with no convolution: torch.compile leaves each RNN one
    # opaque call, and the Python loop over time steps around them recompiles or breaks the graph.
    recurrent: set[str] = set()
    while True:
        more = {name for name, layers in builds.items() if name not in recurrent
                and any(b in _RNN_LAYERS or b in recurrent for b in layers)
                and not any(b.startswith("Conv") for b in layers)}
        if not more:
            break
        recurrent |= more
    return frozenset(found | recurrent)


def _top_level_block(text: str, start: int) -> str:
    """The text of a top-level class or function from `start` (past its header) to the next top-level line."""
    end = _NEXT_TOP_LEVEL.search(text, start)
    return text[start: end.start() if end else len(text)]


def _option_reads(text: str) -> set[str]:
    """The options read from a parsed command line or a config tree: `args.lr`, `self.opt.niter`,
    `cfg.MIXUP.ENABLE` -> {"lr", "niter", "MIXUP", "MIXUP.ENABLE"}. Found by substring search (a warm run
    scans every file: a regex alternation over the text costs 10x more)."""
    found = set()
    for holder in (*OPTION_HOLDERS, *OPTION_HOLDER_ENDINGS):
        key = holder + "."
        at = text.find(key)
        while at != -1:
            if at == 0 or holder[0] == "_" or not (text[at - 1].isalnum() or text[at - 1] == "_"):
                m = _OPTION_PATH.match(text, at + len(key))
                if m:
                    path = m.group(0)
                    found.add(path)
                    while "." in path:  # `cfg.A.B.method()` reads A.B.method, A.B and A
                        path = path.rsplit(".", 1)[0]
                        found.add(path)
            at = text.find(key, at + 1)
    return found


def _read_options(scan: Scan, program: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """The defaults of the options a file reads: its own declarations first, then its program's (one of
    which disagrees with another: none)."""
    declared = {**program, **scan.options}
    return tuple(sorted((n, declared[n]) for n in scan.option_reads if declared.get(n, UNKNOWN) != UNKNOWN))


def _read_backs(text: str) -> frozenset[str]:
    """Top-level functions that end by reading a value back to the host: every `return` does (`return
    correct.item() * 100.0 / n`, DIS's `return pre.cpu().data.numpy(), ...`), or the body does and the returns
    only compute on what it read (`return n_correct / batch_size`). A call of one waits for the device, like a
    `.item()` written at the call."""
    found = set()
    for match, body, _ in _top_level_blocks(text, _TOP_DEF):
        name = match.group(1)
        returns = _RETURN.findall(body)
        if returns and (all(_READ_BACK.search(r) for r in returns)
                        or _READ_BACK.search(body) and not any("(" in r for r in returns)):
            found.add(name)  # `return n.item() / b`, or `n = c.sum().item()` ... `return n / b`
    return frozenset(found)


def _top_level_blocks(text: str, header: re.Pattern):
    """Each top-level definition a pattern finds: its match, its text up to the next top-level line, and where
    its body starts (past the header line)."""
    starts = list(header.finditer(text))
    for i, match in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
        block = text[match.start():end]
        first = block.find("\n") + 1 or len(block)
        top = _TOP_LEVEL_LINE.search(block, first)  # it ends at the next top-level line
        yield match, block[: top.start()] if top else block, first


_TOP_DEF_OR_CLASS = re.compile(r"^(def|class)[ \t]+(\w+)", re.MULTILINE)
_SYNCHRONIZE = re.compile(r"\bsynchronize\(\s*\)")
_LOOP_LINE = re.compile(r"^\s+(for|while)\b", re.MULTILINE)


def _synchronizers(text: str) -> frozenset[str]:
    """Top-level timing helpers that wait for the device: a short function without a loop that calls
    `synchronize()` (YOLOv6's `time_sync()`, YOLOP's `time_synchronized()`), and a context manager whose
    class calls it (yolov5's `Profile`, entered as `with dt[0]:`); a class is named with a trailing `()`.
    A call of one, or entering and leaving one, waits like an explicit `synchronize()`."""
    found = set()
    for match, body, first in _top_level_blocks(text, _TOP_DEF_OR_CLASS):
        kind, name = match.group(1), match.group(2)
        if not _SYNCHRONIZE.search(body, first):  # past the `def` line (detectron2's `def synchronize():` is a
            continue  # barrier)
        if kind == "class":
            if "def __enter__" in body or "def __exit__" in body:
                found.add(name + "()")
        elif body.count("\n") <= 12 and not _LOOP_LINE.search(body):
            found.add(name)
    return frozenset(found)


def _declared_options(text: str) -> dict[str, str]:
    """The default of each `parser.add_argument("--name", ...)` as Python literal text (`store_true` ->
    "False", no default -> "None"), UNKNOWN where it is not a literal or two declarations disagree."""
    found: dict[str, str] = {}

    def add(name: str, value: str) -> None:
        found[name] = value if found.get(name, value) == value else UNKNOWN

    if "_C." in text:  # switches and sizes; a name (`_C.MODEL.ARCH = "slowfast"`) picks among paths a config
        for m in _CONFIG_DEFAULT.finditer(text):  # file chooses, each as real as the default one
            if m.group(2)[0] not in "'\"":
                add(m.group(1)[1:], m.group(2))
    for m in _SETTINGS.finditer(text):  # `HParams(epochs=500, fp16_run=False, ...)`: each literal keyword
        for part in _top_level_parts(text, m.end(), 20000):
            setting = _SETTING.match(re.sub(r"#[^\n]*", "", part))
            if setting:
                add(*setting.groups())
    for m in _SETTINGS_CLASS.finditer(text):  # `num_discrete_actions: int | None = None` in a settings class
        indent = None
        for field in _FIELD.finditer(_top_level_block(text, m.end())):
            indent = indent or field.group(1)
            if field.group(1) == indent:  # the class's own fields, not a method's locals
                add(field.group(2), field.group(3))
    if "DEFINE_" in text:  # absl: `flags.DEFINE_integer("eval_step", 0, help=...)`
        for m in _ABSL_FLAG.finditer(text):
            add(m.group(1), m.group(2))
    for m in _ADD_ARGUMENT.finditer(text):
        call = "".join(_top_level_parts(text, m.end(), 4000, ",")) + ")"
        flag, dest = _FLAG.match(call), _DEST.search(call)
        if dest is None and flag is None:
            continue
        name = dest.group(1) if dest else flag.group(1).replace("-", "_")
        given, store = _DEFAULT.search(call), _STORE.search(call)
        if given is not None:
            value = given.group(1)
        elif _ANY_DEFAULT.search(call):
            value = UNKNOWN
        else:
            value = str(store.group(1) == "store_false") if store else "None"
        add(name, value)
    return found


def _top_level_parts(text: str, start: int, limit: int, joiner: str | None = None) -> list[str]:
    """The comma-separated arguments of the call whose "(" ends at `start`, up to its ")" (at most `limit`
    characters; brackets nest, strings are not parsed). With a joiner, the commas are kept."""
    parts, depth, begin = [], 1, start
    for m in _PUNCTUATION.finditer(text, start, min(len(text), start + limit)):
        ch = m.group(0)
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if not depth:
                parts.append(text[begin:m.start()])
                return parts
        elif depth == 1:
            parts.append(text[begin:m.start()] + (joiner or ""))
            begin = m.end()
    parts.append(text[begin:start + limit])
    return parts


def _compiles_a_model(line: str) -> bool:
    """`torch.compile(model)`, `self.net.compile()`, `torch.jit.script(model)`; not `torch.compile(_update_fn)`
    (an optimizer's helper), whose compiling fuses nothing of the model."""
    m = re.search(r"(?:torch\.compile|jit\.script|jit\.trace|export\.export)\(\s*([\w.]+)(\()?", line)
    if m is not None and m.group(2):
        return True  # `torch.compile(Net())`, `torch.compile(nn.Sequential(...))`: a model built in place
    if m is None:
        m = re.search(r"([\w.]+)\.compile\(", line)
    parts = m.group(1).split(".") if m else [""]
    if len(parts) > 1 and parts[-1] == "forward":
        parts.pop()  # `torch.compile(self.image_encoder.forward)`: the module's forward
    return any(w in parts[-1].lower() for w in _MODEL_WORDS)


def _guard(lines: list[str], row: int, indent: int, entry: bool) -> tuple[str | None, bool]:
    """The flag a compile call runs under: the condition of the nearest enclosing `if` (`if args.compile:`
    -> ("compile", False), `if not eager:` -> ("eager", True)); (None, False) when it always runs with the
    program. In a library function (a file that is not a script) it runs only if someone calls it: never
    by default, as far as a text scan can tell."""
    flag: tuple[str | None, bool] | None = None
    for line in reversed(lines[:row]):
        stripped = line.lstrip()
        depth = len(line) - len(stripped)
        if depth >= indent or not stripped.startswith(_BLOCKS):
            continue  # a line inside the block, or the continuation of a long header: `) -> Module:`
        indent = depth
        m = _GUARD.match(stripped)
        if m and flag is None:
            flag = (m.group(2).rsplit(".", 1)[-1], bool(m.group(1)))
        if stripped.startswith(("def ", "async def ")) and not entry:
            return _LIBRARY, False
        if depth == 0:
            break
    return flag if flag is not None else (None, False)


_LIBRARY = "<a library function>"
_HF_TRAINER = {"Trainer", "Seq2SeqTrainer", "TrainingArguments", "Seq2SeqTrainingArguments"}


class Project:
    """The files of one run, their local imports resolved, and the facts each is linted with."""

    def __init__(self, scans: dict[str, Scan], installable: bool = True) -> None:
        """`installable`: the project declares a distribution (`declares_distribution`), so users may import
        its packages from code outside the run; False when only the run's own files can."""
        self.scans = scans  # key: path relative to the project root, with forward slashes
        self.installable = installable
        self._by_name: dict[str, list[str]] = {}
        packages = {PurePosixPath(path).parent.as_posix() for path in scans
                    if PurePosixPath(path).name == "__init__.py"}
        for path in scans:
            parts = list(PurePosixPath(path).with_suffix("").parts)
            if parts and parts[-1] == "__init__":
                parts = parts[:-1]
            for i in range(len(parts)):
                # `mingpt.model` for distributed/minGPT-ddp/mingpt/model.py (a folder scripts run from is on
                # sys.path), but not `torch` for d2l/torch.py: inside the d2l package that name is torch's.
                if i and "/".join(parts[:i]) in packages:
                    continue
                self._by_name.setdefault(".".join(parts[i:]), []).append(path)
        self._torch: dict[str, bool] = {}
        self._options: dict[str, dict[str, str]] = {}  # per file: the options its program declares
        self._read_back_names = set().union(*(s.read_backs for s in scans.values()))
        self._synchronizer_names = {n.removesuffix("()") for s in scans.values() for n in s.synchronizers}
        self._runner_names = set().union(*(s.runners for s in scans.values()))
        self._not_worth_names = set().union(*(s.not_worth_compiling for s in scans.values()))
        self._flags_passed: dict[str, frozenset[str]] = {}  # per file of a program of several files
        importers, wholesale = self._imports()
        self._programs = self._connect(importers)
        unseen = any(s.dynamic_imports for s in self.scans.values())  # a file imports by a computed name
        self._unused = frozenset() if unseen else self._find_unused(importers)
        self._unused_defines = {} if unseen else self._find_unused_defines(importers, wholesale)
        self._named_elsewhere = None if unseen else self._find_named_elsewhere(wholesale)

    def resolve(self, path: str, level: int, module: str, names: tuple[str, ...]) -> list[str]:
        """The project files an import statement of `path` may load."""
        out = [self.module_file(path, level, f"{module}.{n}" if module else n) for n in names]
        out.append(self.module_file(path, level, module) if module or level else None)
        return [f for f in out if f is not None]

    def module_file(self, path: str, level: int, module: str) -> str | None:
        """The project file a module name imported by `path` loads (`level`: the dots of a relative import)."""
        if level:
            base = PurePosixPath(path).parent
            for _ in range(level - 1):
                base = base.parent
            module = ".".join(p for p in (base.as_posix().replace("/", "."), module) if p and p != ".")
        if not level and module and self.scans[path].runs_code \
                and module.split(".")[0] not in api.TORCH_PACKAGES | api.OTHER_FRAMEWORKS:
            # A script's own folder comes first on sys.path: NGCF/main.py's `from NGCF import NGCF` loads
            # NGCF/NGCF.py beside it, not the package NGCF/ it sits in.
            base = PurePosixPath(path).parent / module.replace(".", "/")
            for sibling in (f"{base}.py", f"{base}/__init__.py"):
                if sibling in self.scans and sibling != path:
                    return sibling
        found = [f for f in self._by_name.get(module, ()) if f != path] if module else None
        if not found:
            return None
        # The nearest (the longest shared folder prefix); of those, the shallowest: a script's `from
        # exp.exp_main import Exp_Main` loads exp/ beside it, not Formers/FEDformer/exp/ further down.
        return max(found, key=lambda f: (len(_common(f, path)), -f.count("/")))

    def function_file(self, path: str, level: int, module: str, name: str | None, member: tuple[str, ...],
                      depth: int = 0) -> tuple[str, str] | None:
        """Where `module.name.member...`, imported by `path`, is defined: (file, qualified name in it),
        through re-exports (`from .box_ops import box_iou` in a package's `__init__.py`)."""
        parts = ([name] if name else []) + list(member)
        for k in range(len(parts) - 1, -1, -1):  # the longest prefix that is a module of the run
            file = self.module_file(path, level, ".".join(p for p in (module, *parts[:k]) if p))
            if file is None:
                continue
            rest = parts[k:]
            scan = self.scans[file]
            if rest[0] in scan.defines:
                return file, ".".join(rest)
            if depth < 3:
                for lvl, mod, names in scan.imports:
                    if rest[0] in names:
                        return self.function_file(file, lvl, mod, rest[0], tuple(rest[1:]), depth + 1)
            return None
        return None

    def is_torch(self, path: str) -> bool:
        found = self._torch.get(path)
        if found is not None:
            return found
        self._torch[path] = False  # an import cycle proves nothing
        scan = self.scans[path]
        result = scan.torch_direct
        if not result and not scan.other_framework and not scan.xla:
            result = any(self.is_torch(dep) for level, module, names in scan.imports
                         for dep in self.resolve(path, level, module, names) if dep != path)
        self._torch[path] = result
        return result

    def _imports(self) -> tuple[dict[str, set[str]], set[str]]:
        """Each file of the run that another imports, with its importers (import statements resolved once,
        here); and the files imported wholesale (`import utils`, `from pkg import utils`, `from utils import
        *`), any of whose names the importer may use."""
        importers: dict[str, set[str]] = {}
        wholesale: set[str] = set()
        for path, scan in self.scans.items():
            for level, module, names in scan.imports:
                subs = [f for n in names if (f := self.module_file(path, level, f"{module}.{n}" if module else n))]
                own = self.module_file(path, level, module) if module or level else None
                for dep in (subs + [own]) if own else subs:
                    if dep != path:
                        importers.setdefault(dep, set()).add(path)
                wholesale.update(subs)
                if own and not names:
                    wholesale.add(own)
        return importers, wholesale

    def _connect(self, importers: dict[str, set[str]]) -> dict[str, tuple[bool, bool, bool, bool, bool, bool]]:
        """For each file, facts of its program (the files linked to it by local imports, either way): does
        it compile a model somewhere, does it do so by default, does it move work to a device, does it
        define a `to()` method of its own, does it differentiate twice (last), does it make the device the
        default for new tensors (ssd.pytorch's
        train.py sets `torch.cuda.FloatTensor` as the default type, so its loss's `torch.Tensor(...)` is made
        there). A folder of separate examples is many programs; a package and
        the scripts that import it are one."""
        parent = {path: path for path in self.scans}

        def find(p: str) -> str:
            while parent[p] != p:
                parent[p] = parent[parent[p]]
                p = parent[p]
            return p

        for dep, users in importers.items():
            for user in users:
                parent[find(dep)] = find(user)
        members: dict[str, list[Scan]] = {}
        program_options: dict[str, dict[str, str]] = {}
        for path, scan in self.scans.items():
            members.setdefault(find(path), []).append(scan)
        for scans in members.values():  # per file: its flags that another file of its program names with `=`
            if len(scans) > 1:
                written = Counter(n for s in scans for n in s.assigned)
                for s in scans:
                    self._flags_passed[s.path] = frozenset(n for n in s.flags if written[n] > (n in s.assigned))
        programs = {}
        for root, scans in members.items():
            device_work = any(s.device_work for s in scans if s.torch_direct)
            custom_to = any(s.custom_to for s in scans)
            scans = [s for s in scans if not is_test_path(s.path)]  # a test that scripts a model is not the run
            defaults = set().union(*(s.true_defaults for s in scans))
            any_compile = any(s.compile_guards for s in scans)
            programs[root] = (any_compile, any_compile and any(s.compiled_by_default(defaults) for s in scans),
                              device_work, custom_to, any(s.default_device for s in scans),
                              any(s.double_backward for s in scans), any(s.extension_layers for s in scans))
            options = program_options[root] = {}
            for s in scans:
                for name, value in s.options.items():
                    options[name] = value if options.get(name, value) == value else UNKNOWN
        for path in self.scans:
            self._options[path] = program_options[find(path)]
        return {path: programs[find(path)] for path in self.scans}

    def _find_unused(self, importers: dict[str, set[str]]) -> frozenset[str]:
        """The modules that only define, that no file of the run imports or names in an import, in a folder
        whose other modules a file of the run outside it imports: the run holds this folder's users, and
        none uses this one."""
        words = {w for s in self.scans.values() for _, module, names in s.imports for w in (*module.split("."), *names)}
        used_folders = {PurePosixPath(dep).parent for dep, users in importers.items()
                        if any(PurePosixPath(u).parent != PurePosixPath(dep).parent for u in users)}
        return frozenset(path for path, scan in self.scans.items()
                         if not scan.runs_code and path not in importers and path.endswith(".py")
                         and PurePosixPath(path).name not in _ENTRY_NAMES and not is_test_path(path)
                         and PurePosixPath(path).stem not in words and PurePosixPath(path).parent in used_folders)

    def _find_named_elsewhere(self, wholesale: set[str]) -> dict[str, frozenset[str] | None]:
        """Per file, its top-level names that other files import by name; None for a file imported whole."""
        out: dict[str, frozenset[str] | None] = {path: frozenset() for path in self.scans}
        for path, scan in self.scans.items():
            for level, module, names in scan.imports:
                for name in names:
                    found = self.function_file(path, level, module, name, ())
                    if found is not None and found[0] != path and out.get(found[0]) is not None:
                        out[found[0]] = out[found[0]] | {found[1].split(".")[0]}
        for path in wholesale:
            out[path] = None
        return out

    def _find_unused_defines(self, importers: dict[str, set[str]], wholesale: set[str]) -> dict[str, frozenset[str]]:
        """Per file, the classes and functions it alone writes that no file of the run imports from it and uses, in a
        file that some file of the run imports by name and never wholesale (`import utils` could reach `utils.X`),
        outside a package of an installable project (whose modules users may import from elsewhere): the
        packages of a repository of scripts (yolov7's utils/) have no users but its own files."""
        named: set[tuple[str | None, str]] = set()  # (defining file, name), the file None where not resolved
        for importer, s in self.scans.items():
            for level, module, names in s.imports:
                for n in names:
                    if n not in s.unused_imports:  # imported and never used is no use (DINO's `test`)
                        found = self.function_file(importer, level, module, n, ())
                        named.add((found[0] if found else None, n))
        packages = {PurePosixPath(p).parent for p in self.scans if PurePosixPath(p).name == "__init__.py"}
        out = {}
        for path, scan in self.scans.items():
            if scan.lone_defines and path in importers and path not in wholesale and not is_test_path(path) \
                    and not (self.installable and PurePosixPath(path).parent in packages):
                lone = frozenset(n for n in scan.lone_defines if (path, n) not in named and (None, n) not in named)
                if lone:
                    out[path] = lone
        return out

    def _helpers(self, path: str, kind: str, known: set[str]) -> set[str]:
        """The helpers of one kind (a Scan attribute: `read_backs`, `synchronizers`) a file defines or imports
        from another file of the run, under the names it uses (a class keeps its trailing `()`)."""
        scan = self.scans[path]
        found = set(getattr(scan, kind))
        for level, module, names in scan.imports if known else ():
            if names and not known.intersection(names):
                continue
            if not names:  # `import utils` (then `utils.accuracy(...)`) or `from utils import *`
                file = self.module_file(path, level, module)
                found.update(getattr(self.scans[file], kind) if file is not None else ())
            for n in names:
                where = self.function_file(path, level, module, n, ()) if n in known else None
                if where is not None:
                    theirs = getattr(self.scans[where[0]], kind)
                    found.update(mine for mine, name in ((n, where[1]), (n + "()", where[1] + "()")) if name in theirs)
        return found

    def facts(self, path: str, tests_as_code: bool = False) -> FileFacts:
        """The facts one file is linted with (`tests_as_code`: a test file is judged as any other)."""
        scan = self.scans[path]
        compiles, by_default, device_work, custom_to, default_device, double_backward, extension_layers = \
            self._programs[path]
        local = frozenset(f"{level}:{module}" for level, module, names in scan.imports
                          if self.resolve(path, level, module, names))
        read_backs = self._helpers(path, "read_backs", self._read_back_names)
        synchronizers = self._helpers(path, "synchronizers", self._synchronizer_names)
        runners = dict(scan.runners)
        for level, module, names in scan.imports if self._runner_names else ():
            for n in self._runner_names.intersection(names):
                found = self.function_file(path, level, module, n, ())
                if found is not None and found[1] in self.scans[found[0]].runners:
                    runners[n] = self.scans[found[0]].runners[found[1]]
        exempt = set(scan.not_worth_compiling)
        for level, module, names in scan.imports if self._not_worth_names else ():
            if not names:  # `from model import *`, `import model` (then `model.GCNII(...)`)
                file = self.module_file(path, level, module)
                exempt.update(self.scans[file].not_worth_compiling if file is not None else ())
            for n in self._not_worth_names.intersection(names):
                found = self.function_file(path, level, module, n, ())
                if found is not None and found[1] in self.scans[found[0]].not_worth_compiling:
                    exempt.add(n)
        return FileFacts(torch=self.is_torch(path), test_file=is_test_path(path) and not tests_as_code,
                         device_work=device_work,
                         compiles=compiles, compiled_by_default=by_default, default_device=default_device,
                         double_backward=double_backward, extension_layers=extension_layers,
                         custom_to=custom_to, local_imports=local, options=_read_options(scan, self._options[path]),
                         read_backs=frozenset(read_backs), synchronizers=frozenset(synchronizers),
                         unused=path in self._unused or set_aside(path),
                         unused_defines=self._unused_defines.get(path, frozenset()),
                         runners=tuple(sorted(runners.items())), flags_passed=self._flags_passed.get(path),
                         not_worth_compiling=frozenset(exempt),
                         named_elsewhere=None if self._named_elsewhere is None else self._named_elsewhere.get(path))


def _common(a: str, b: str) -> tuple:
    pa, pb = PurePosixPath(a).parts, PurePosixPath(b).parts
    out = []
    for x, y in zip(pa, pb):
        if x != y:
            break
        out.append(x)
    return tuple(out)
