"""Usage errors and the argument parser that reports them, shared by `perflint` and its subcommands:
one line on stderr and exit code 2, never argparse's usage dump or a traceback."""

from __future__ import annotations

import argparse


class UsageError(Exception):
    """A usage or configuration mistake: reported in one line, exit code 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse prints usage and exits 2; the command prints one line instead
        raise UsageError(message)
