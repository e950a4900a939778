"""Reading JSON files with errors that name the file and the position.

>>> import tempfile, os
>>> p = os.path.join(tempfile.mkdtemp(), "deep.json")
>>> _ = open(p, "w").write("[" * 100_000 + "]" * 100_000)
>>> read_json(p)
Traceback (most recent call last):
...
viz_place.errors.InputFormatError: ...deep.json: JSON nested too deeply to read (more than ... levels)
>>> path = os.path.join(tempfile.mkdtemp(), "bad.json")
>>> _ = open(path, "w").write('{"nodes": [1, 2,]}')
>>> read_json(path)
Traceback (most recent call last):
...
viz_place.errors.InputFormatError: .../bad.json: invalid JSON at line 1 column 17: Expecting value
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any

from ..errors import InputFormatError


def read_json(path: str | os.PathLike) -> Any:
    """Parse ``path`` as JSON; missing files and syntax errors become :class:`InputFormatError`."""
    try:
        with open(path, "r", encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        raise InputFormatError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise InputFormatError(f"{path}: is a directory, expected a file") from None
    except UnicodeDecodeError:
        raise InputFormatError(f"{path}: not a UTF-8 text file") from None
    except RecursionError:
        raise InputFormatError(f"{path}: JSON nested too deeply to read (more than {sys.getrecursionlimit()} "
                               "levels)") from None
    except json.JSONDecodeError as err:
        raise InputFormatError(f"{path}: invalid JSON at line {err.lineno} column {err.colno}: {err.msg}") from None
