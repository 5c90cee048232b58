"""Facts about a file that come from the whole run: is it PyTorch code (it imports torch, or a module of
the linted project that does), does the project move work to a device, does it compile models anywhere.

A cheap text scan of every file (imports and a few words, no parse) answers these before linting, so
the files can still be linted one by one, in any process, and cached: the facts a file was linted with
are part of its cache key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from perflint.model import torchapi as api

_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^#\n;]*)"
                     r"|import[ \t]+([^#\n;]+))", re.MULTILINE)
_DEVICE_WORK = re.compile(r"\.cuda\(|[\"']cuda|\.to\([^)\n]*(?:device|dev\b|rank|gpu)|device\s*=|torch\.device\(")
_COMPILE = re.compile(r"torch\.compile\b|torch\.jit\.(?:script|trace)\b|\bjit\.(?:script|trace)\(|_dynamo\.optimize"
                      r"|\.compile\(|torch\.export\b|torch_compile|\bcompile\s*=")
_DEFAULT_DEVICE = re.compile(r"set_default_device|set_default_tensor_type\([^)]*cuda")
_TEST_NAME = re.compile(r"(?:^test_.*|.*_test|^conftest)\.(?:py|ipynb)$")


@dataclass(frozen=True)
class FileFacts:
    """What the run knows about one file beyond its own text."""

    torch: bool = True  # PyTorch code: rules about torch apply
    test_file: bool = False  # test_*.py, *_test.py, conftest.py, or below a tests/ folder
    device_work: bool = True  # the project moves work to an accelerator somewhere
    compiles: bool = False  # the project calls torch.compile (or TorchScript, export) somewhere
    default_device: bool = False  # this file sets the default device: factories may not make host tensors

    def key(self) -> str:
        return "".join("1" if v else "0" for v in (self.torch, self.test_file, self.device_work, self.compiles,
                                                    self.default_device))

    @staticmethod
    def alone(text: str = "", path: str = "") -> "FileFacts":
        """The facts of a file linted on its own: everything comes from its text."""
        scan = Scan(path, text)
        return FileFacts(torch=scan.torch_direct or not text, test_file=is_test_path(path),
                         device_work=scan.device_work or not text, compiles=scan.compiles,
                         default_device=scan.default_device)


def is_test_path(path: str) -> bool:
    parts = PurePosixPath(path.replace("\\", "/")).parts
    return bool(parts) and (bool(_TEST_NAME.match(parts[-1])) or any(p in ("tests", "test") for p in parts[:-1]))


class Scan:
    """The imports and a few telling words of one file's text."""

    __slots__ = ("path", "imports", "torch_direct", "other_framework", "device_work", "compiles",
                 "default_device")

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.imports: list[tuple[int, str, tuple[str, ...]]] = []  # (level, module, names)
        heads = set()
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
                names = tuple(n.strip().split(" as ")[0].strip() for n in m.group(2).strip("()").split(","))
                names = tuple(n for n in names if re.fullmatch(r"\w+", n))
                self.imports.append((level, module.lstrip("."), names))
                if level == 0 and module:
                    heads.add(module.split(".")[0])
        self.torch_direct = bool(heads & api.TORCH_PACKAGES)
        self.other_framework = bool(heads & api.OTHER_FRAMEWORKS)
        self.device_work = bool(_DEVICE_WORK.search(text))
        self.compiles = bool(_COMPILE.search(text))
        self.default_device = bool(_DEFAULT_DEVICE.search(text))


class Project:
    """The files of one run, their local imports resolved, and the facts each is linted with."""

    def __init__(self, scans: dict[str, Scan]) -> None:
        self.scans = scans  # key: path relative to the project root, with forward slashes
        self._by_name: dict[str, list[str]] = {}
        for path in scans:
            parts = list(PurePosixPath(path).with_suffix("").parts)
            if parts and parts[-1] == "__init__":
                parts = parts[:-1]
            for i in range(len(parts)):
                self._by_name.setdefault(".".join(parts[i:]), []).append(path)
        self._torch: dict[str, bool] = {}
        torch_files = [s for s in scans.values() if s.torch_direct]
        self.device_work = any(s.device_work for s in torch_files)
        self.compiles = any(s.compiles for s in torch_files)

    def resolve(self, path: str, level: int, module: str, names: tuple[str, ...]) -> list[str]:
        """The project files an import statement of `path` may load."""
        here = PurePosixPath(path).parent
        wanted = []
        if level:
            base = here
            for _ in range(level - 1):
                base = base.parent
            prefix = ".".join(p for p in (base.as_posix().replace("/", "."), module) if p and p != ".")
            wanted = [f"{prefix}.{n}" if prefix else n for n in names] + ([prefix] if prefix else [])
        else:
            wanted = [f"{module}.{n}" for n in names] + [module]
        out = []
        for name in wanted:
            found = self._by_name.get(name)
            if found:
                # the nearest candidate: sharing the longest folder prefix with the importer
                out.append(max(found, key=lambda f: len(_common(f, path))))
        return out

    def is_torch(self, path: str) -> bool:
        found = self._torch.get(path)
        if found is not None:
            return found
        self._torch[path] = False  # an import cycle proves nothing
        scan = self.scans[path]
        result = scan.torch_direct
        if not result and not scan.other_framework:
            result = any(self.is_torch(dep) for level, module, names in scan.imports
                         for dep in self.resolve(path, level, module, names) if dep != path)
        self._torch[path] = result
        return result

    def facts(self, path: str) -> FileFacts:
        scan = self.scans[path]
        return FileFacts(torch=self.is_torch(path), test_file=is_test_path(path),
                         device_work=self.device_work or scan.device_work, compiles=self.compiles,
                         default_device=scan.default_device)


def _common(a: str, b: str) -> tuple:
    pa, pb = PurePosixPath(a).parts, PurePosixPath(b).parts
    out = []
    for x, y in zip(pa, pb):
        if x != y:
            break
        out.append(x)
    return tuple(out)
