"""The ``viz-place`` command line.

Subcommands live in small modules that each provide ``add_parsers(sub)``;
add a module to :data:`COMMAND_MODULES` to add commands. Errors in the input
exit with status 2 and one line on stderr naming the problem — never a
traceback. A bug (:class:`~viz_place.errors.InternalError`, or any other
unexpected exception) exits with status 1 and ``internal error (please report): ...``
(``VIZ_PLACE_DEBUG=1`` shows the traceback for bug reports).

>>> main(["info", "chain", "--json"])          # doctest: +ELLIPSIS
{
 "name": "chain",
 "nodes": 24,
 ...
0
>>> main(["info", "no-such-graph"])           # the one-line message goes to stderr
2
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
import threading

from ..errors import InternalError, VizPlaceError

EXIT_INTERNAL = 1

#: Modules under viz_place.cli that add subcommands.
COMMAND_MODULES = ("inspect_cmds", "solve_cmds", "import_cmd", "rl_cmds", "sweep_cmd")


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


def main(argv: list[str] | None = None, *, startup_sigints: list | None = None) -> int:
    """Run one command; the exit status: 0 ok, 2 bad input (one line on stderr), 130 interrupted, 1 a bug.

    Ctrl-C while the modules load is remembered, not raised (a
    ``KeyboardInterrupt`` inside an extension module's import can turn into an
    ``ImportError`` traceback), and answered with one line once loading is
    done; later — while reading inputs — it prints the same line; during
    ``solve`` it stops the solver, which hands back its best placement so far
    (see :func:`viz_place.cli.common.interrupt_to_cancel`). The exit status
    is 130 in every case. ``startup_sigints``: the list the console script's
    first line (:mod:`viz_place.cli.entry`) already collects SIGINTs in.
    """
    with _sigint_deferred(startup_sigints) as pending:
        try:
            parser = build_parser()
        except Exception as err:  # a broken install: one line too
            if os.environ.get("VIZ_PLACE_DEBUG"):
                raise
            print(f"viz-place: internal error (please report) while loading: {type(err).__name__}: "
                  f"{_one_line(err)}", file=sys.stderr)
            return EXIT_INTERNAL
    if pending:
        print("viz-place: interrupted", file=sys.stderr)
        return 130
    try:
        args = parser.parse_args(argv)
        return _run(args)
    except KeyboardInterrupt:
        print("viz-place: interrupted", file=sys.stderr)
        return 130


@contextlib.contextmanager
def _sigint_deferred(already: list | None = None):
    """Inside the block, SIGINT only appends to the yielded list; afterwards Python's default handler is back.

    ``already``: a list a handler installed earlier (the console script's) appends to. Without it, nothing
    is deferred unless Python's default handler is in force (an ignored SIGINT stays ignored).
    """
    if already is not None:
        try:
            yield already
        finally:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        return
    pending: list[int] = []
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield pending
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: pending.append(signum))
    try:
        yield pending
    finally:
        signal.signal(signal.SIGINT, previous)


def _run(args) -> int:
    try:
        return int(args.run(args) or 0)
    except VizPlaceError as err:
        print(f"viz-place: error: {_one_line(err)}", file=sys.stderr)
        return 2
    except InternalError as err:
        if os.environ.get("VIZ_PLACE_DEBUG"):
            raise
        print(f"viz-place: internal error (please report): {_one_line(err)}", file=sys.stderr)
        return EXIT_INTERNAL
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
        print(f"viz-place: internal error (please report): {type(err).__name__}: {_one_line(err)} "
              "(set VIZ_PLACE_DEBUG=1 for a traceback)", file=sys.stderr)
        return EXIT_INTERNAL


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
