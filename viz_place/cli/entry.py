"""The ``viz-place`` console script: Ctrl-C from its first line on gives one line, never a traceback.

Importing this module (only the console script and ``python -m viz_place``
do) replaces Python's SIGINT handler at once — with the C module ``_signal``,
before anything else loads — by one that only remembers the signal; the
command modules then load undisturbed and :func:`viz_place.cli.main.main`
answers a remembered Ctrl-C with ``viz-place: interrupted`` (exit 130).
What Python does before this first line runs (about 50 ms of interpreter
start-up) is outside the tool's reach.
"""
import _signal

_pending: list = []


def _remember(signum, frame) -> None:
    _pending.append(signum)


try:
    _installed = _signal.getsignal(_signal.SIGINT) is not _signal.SIG_IGN
    if _installed:
        _signal.signal(_signal.SIGINT, _remember)
except ValueError:  # not the main thread: nothing to defer
    _installed = False


def run() -> None:
    """Entry point of the console script."""
    import sys

    from .main import main
    sys.exit(main(startup_sigints=_pending if _installed else None))
