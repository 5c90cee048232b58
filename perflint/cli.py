"""The `perflint` command. Exit codes: 0 no findings, 1 findings (or a broken budget for `trace`),
2 usage, configuration or input error (one line on stderr, never a traceback)."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from perflint import __version__

# The linter's modules (libcst through perflint.rule) are imported once `main` knows it is linting:
# `perflint trace` must not pay for them.
SUBCOMMANDS = {"trace": "perflint.trace.cli"}
EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message}\n")


def _codes(text: str) -> list[str]:
    return [c for c in text.replace(",", " ").split() if c]


def build_parser() -> argparse.ArgumentParser:
    from perflint.reports import FORMATS

    p = _Parser(prog="perflint", description="Find PyTorch performance antipatterns without running the code. "
                "`perflint trace FILE` checks a recorded profiler trace against budgets.")
    p.add_argument("paths", nargs="*", default=["."], help="files or folders to lint (default: .)")
    p.add_argument("--select", type=_codes, help="rule codes or prefixes to enable (replaces the default set)")
    p.add_argument("--ignore", type=_codes, default=[], help="rule codes or prefixes to disable")
    p.add_argument("--extend-select", type=_codes, default=[], help="codes or prefixes to enable in addition")
    p.add_argument("--output-format", choices=FORMATS, default="text")
    p.add_argument("-o", "--output-file", help="write the report to this file instead of stdout")
    p.add_argument("--statistics", action="store_true", help="print a table of counts per rule instead")
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    p.add_argument("--config", type=Path, help="settings file (pyproject.toml or perflint.toml)")
    p.add_argument("--jobs", "-j", type=int, default=0, help="worker processes (default: one per core)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write .perflint_cache/")
    p.add_argument("--list-rules", action="store_true", help="print the rule table and exit")
    p.add_argument("--explain", metavar="CODE", help="print a rule's page and exit")
    p.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    p.add_argument("--unsafe-fixes", action="store_true", help="with --fix or --diff, also apply unsafe fixes")
    p.add_argument("--diff", action="store_true", help="print the fixes as a unified diff; change nothing")
    p.add_argument("--quiet", "-q", action="store_true", help="print findings only, no summary")
    p.add_argument("--trace", metavar="TRACE", help="mark each finding with what this profiler trace measured at "
                   "its line, and list the costly events with no finding (needs torch-perflint[trace])")
    p.add_argument("--version", action="version", version=f"perflint {__version__}")
    return p


def _list_rules() -> str:
    from tabulate import tabulate

    from perflint.rule import TOOL_RULES, all_rules

    rows = [(r.code, r.name, r.family(), "on" if r.default else "off", "yes" if r.gpu_only else "",
             r.fix_safety if r.fix_safety != "none" else "", r.summary)
            for r in [*TOOL_RULES, *all_rules().values()]]
    return tabulate(rows, headers=["code", "name", "family", "default", "gpu", "fix", "summary"])


def main(argv: list[str] | None = None) -> int:
    process = argv is None  # run as the `perflint` command: the process is ours to tune
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in SUBCOMMANDS:
        return _subcommand(argv, process)
    from perflint.config import ConfigError

    args = build_parser().parse_args(argv)
    try:
        return _run(args)
    except ConfigError as e:
        print(f"perflint: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("perflint: interrupted", file=sys.stderr)
        return 130


def _subcommand(argv: list[str], process: bool) -> int:
    """`perflint trace ...`, dispatched before anything of the linter is imported."""
    import importlib
    import os

    if process:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # numpy's BLAS threads: unused, and slow to start
    try:
        command = importlib.import_module(SUBCOMMANDS[argv[0]])
    except ModuleNotFoundError as exc:  # numpy: in the [trace] extra, the linter does not need it
        print(f"perflint {argv[0]}: error: needs the '{exc.name}' package: "
              f"pip install 'torch-perflint[{argv[0]}]'", file=sys.stderr)
        return EXIT_ERROR
    code = command.main(argv[1:])
    if process:  # the report is out: the OS frees the trace's 10^5 objects faster than the interpreter
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
    return code


def _run(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from perflint.config import ConfigError, load
    from perflint.reports import render
    from perflint.rule import rule_info

    if args.list_rules:
        print(_list_rules())
        return EXIT_CLEAN
    if args.explain:
        from perflint.docs import load_effects, rule_page

        try:
            rule = rule_info(args.explain.upper())
        except KeyError:
            raise ConfigError(f"--explain: unknown rule code {args.explain!r}") from None
        print(rule_page(rule, load_effects(Path(__file__).resolve().parents[1]).get(rule.code)))
        return EXIT_CLEAN
    if args.jobs < 0:
        raise ConfigError("--jobs must be >= 0")
    config = load(args.config)
    if args.select is not None:
        config.select = args.select
    config.ignore += args.ignore
    config.extend_select += args.extend_select
    codes = config.enabled_codes()

    from perflint.runner import lint_paths, per_file_ignores

    findings, files = lint_paths(args.paths, config, jobs=args.jobs, use_cache=not args.no_cache)
    if args.diff:
        from perflint.fix import apply_fixes

        _, fixes = apply_fixes(findings, codes, unsafe=args.unsafe_fixes, write=False, out=sys.stdout,
                               ignored_for=per_file_ignores(config))
        if not args.quiet:
            print(f"Would fix {fixes} finding{'s' if fixes != 1 else ''}.", file=sys.stderr)
        return EXIT_FINDINGS if fixes and not args.exit_zero else EXIT_CLEAN
    if args.fix:
        from perflint.fix import apply_fixes

        findings, fixes = apply_fixes(findings, codes, unsafe=args.unsafe_fixes, write=True, out=sys.stdout,
                                      ignored_for=per_file_ignores(config))
        if not args.quiet and args.output_format == "text":
            print(f"Fixed {fixes} finding{'s' if fixes != 1 else ''}.", file=sys.stderr)
    if args.statistics:
        counts = Counter(f.code for f in findings)
        names = {f.code: f.name for f in findings}
        output = tabulate([(c, names[c], n) for c, n in sorted(counts.items())], headers=["code", "name", "count"]) \
            if counts else ""
    else:
        rules = [rule_info(c) for c in codes]
        color = args.output_format == "text" and args.output_file is None and sys.stdout.isatty()
        options = {"color": color} if args.output_format == "text" else {}
        output = render(args.output_format, findings, rules, **options)
    if args.trace:
        output = _with_trace(args, findings, output)
        if output is None:
            return EXIT_ERROR
    if args.output_file:
        Path(args.output_file).write_text(output + "\n", encoding="utf-8")
    elif output:
        print(output)
    if args.output_format == "text" and not args.quiet:
        noun = "finding" if len(findings) == 1 else "findings"
        print(f"Found {len(findings)} {noun} in {files} files." if findings else f"All clear: {files} files checked.",
              file=sys.stderr if args.output_file else sys.stdout)
    return EXIT_FINDINGS if findings and not args.exit_zero else EXIT_CLEAN


def _with_trace(args: argparse.Namespace, findings, output: str) -> str | None:
    """The report joined with a trace (perflint.trace.join); None after a one-line error."""
    if args.output_format not in ("text", "json") or args.statistics:
        print("perflint: error: --trace works with --output-format text or json", file=sys.stderr)
        return None
    try:
        from perflint.trace.join import join, render as render_join
        from perflint.trace.load import TraceError
    except ModuleNotFoundError as exc:
        print(f"perflint: error: --trace needs the '{exc.name}' package: pip install 'torch-perflint[trace]'",
              file=sys.stderr)
        return None
    try:
        return render_join(join(findings, args.trace), args.output_format, output)
    except TraceError as exc:
        print(f"perflint: error: --trace {exc}", file=sys.stderr)
        return None
