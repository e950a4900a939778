"""The ``viz-place`` command line.

Subcommands live in small modules that each provide ``add_parsers(sub)``;
add a module to :data:`COMMAND_MODULES` to add commands. Errors in the input
exit with status 2 and one line on stderr naming the problem — never a
traceback. A bug (:class:`~viz_place.errors.InternalError`, or any other
unexpected exception) exits with status 1 and ``internal error (please report): ...``
(``VIZ_PLACE_DEBUG=1`` shows the traceback for bug reports).
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

from ..errors import InternalError, VizPlaceError

EXIT_INTERNAL = 1

#: Modules under viz_place.cli that add subcommands.
COMMAND_MODULES = ("inspect_cmds", "solve_cmds", "import_cmd", "rl_cmds", "pipeline_cmds")


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
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except VizPlaceError as err:
        print(f"viz-place: error: {err}", file=sys.stderr)
        return 2
    except InternalError as err:
        if os.environ.get("VIZ_PLACE_DEBUG"):
            raise
        print(f"viz-place: internal error (please report): {err}", file=sys.stderr)
        return EXIT_INTERNAL
    except KeyboardInterrupt:
        print("viz-place: interrupted", file=sys.stderr)
        return 130
    except (OSError, MemoryError) as err:
        print(f"viz-place: error: {err}", file=sys.stderr)
        return 2
    except Exception as err:  # a bug: still one line unless debugging
        if os.environ.get("VIZ_PLACE_DEBUG"):
            raise
        print(f"viz-place: internal error (please report): {type(err).__name__}: {err} "
              "(set VIZ_PLACE_DEBUG=1 for a traceback)", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
