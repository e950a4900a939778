"""The ``viz-place`` command line.

Subcommands live in small modules that each provide ``add_parsers(sub)``;
add a module to :data:`COMMAND_MODULES` to add commands. Errors in the input
exit with status 2 and one line on stderr naming the problem — never a
traceback (``VIZ_PLACE_DEBUG=1`` shows one for bug reports).
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

from ..errors import VizPlaceError

#: Modules under viz_place.cli that add subcommands.
COMMAND_MODULES = ("inspect_cmds", "solve_cmds", "import_cmd", "rl_cmds")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="viz-place", description="Place DNN operator graphs on heterogeneous devices.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name in COMMAND_MODULES:
        try:
            mod = importlib.import_module(f"{__package__}.{name}")
        except ModuleNotFoundError as err:
            if err.name == f"{__package__}.{name}":
                continue
            raise
        mod.add_parsers(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; the exit status: 0 ok, 2 bad input (one line on stderr), 130 interrupted, 1 a bug.

    Ctrl-C at any point — while the modules load, while reading — prints one
    line (``viz-place: interrupted``) and exits 130; during ``solve`` it stops
    the solver, which hands back its best placement so far (see
    :func:`viz_place.cli.common.interrupt_to_cancel`).
    """
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        return _run(args)
    except KeyboardInterrupt:
        print("viz-place: interrupted", file=sys.stderr)
        return 130


def _run(args) -> int:
    try:
        return int(args.run(args) or 0)
    except VizPlaceError as err:
        print(f"viz-place: error: {_one_line(err)}", file=sys.stderr)
        return 2
    except BrokenPipeError:          # the reader of our output went away (`| head`): stop quietly
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError:
            pass
        return 141
    except OSError as err:
        print(f"viz-place: error: {_os_error_text(err)}", file=sys.stderr)
        return 2
    except MemoryError:
        print("viz-place: error: out of memory (try a smaller graph or a coarsening option)", file=sys.stderr)
        return 2
    except Exception as err:  # a bug: still one line unless debugging
        if os.environ.get("VIZ_PLACE_DEBUG"):
            raise
        print(f"viz-place: internal error ({type(err).__name__}): {_one_line(err)} "
              "(set VIZ_PLACE_DEBUG=1 for a traceback)", file=sys.stderr)
        return 1


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split())


def _os_error_text(err: OSError) -> str:
    """``PATH: reason`` when the error names a file (our writes name the target, never a temp file)."""
    reason = err.strerror or _one_line(err)
    if err.filename is not None:
        return f"{err.filename}: {reason}"
    return reason


if __name__ == "__main__":
    sys.exit(main())
