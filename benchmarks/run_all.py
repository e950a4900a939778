"""Run every benchmark in this folder, one after another (``make bench``)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    status = 0
    for script in sorted(HERE.glob("*.py")):
        if script.name in ("run_all.py",) or script.name.startswith("_"):
            continue
        print(f"\n=== {script.name} ===", flush=True)
        rc = subprocess.call([sys.executable, str(script)] + sys.argv[1:])
        status = status or rc
    return status


if __name__ == "__main__":
    sys.exit(main())
