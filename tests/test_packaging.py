"""The package as users get it: every folder listed, the data shipped, a wheel that works outside the repo."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]


def _package_folders() -> dict[str, Path]:
    """Every folder that becomes a package: name -> source folder, following ``package-dir``."""
    found = {}
    for name, folder in SETUPTOOLS["package-dir"].items():
        root = REPO / folder
        found[name] = root
        for sub in root.rglob("*"):
            if sub.is_dir() and sub.name != "__pycache__" and any(sub.iterdir()):
                rel = sub.relative_to(root).parts
                found[".".join((name, *rel))] = sub
    return found


def test_every_package_folder_is_listed():
    assert sorted(SETUPTOOLS["packages"]) == sorted(_package_folders())


def test_package_data_covers_every_data_file():
    data = SETUPTOOLS.get("package-data", {})
    # the C sources of the extensions setup.py builds, and the libraries an editable install builds beside them
    # (ignored by git), are not data
    ext_sources = {REPO / src for src in re.findall(r'"([\w/]+\.[ch])"', (REPO / "setup.py").read_text())}
    assert ext_sources and all(src.is_file() for src in ext_sources)
    for name, folder in _package_folders().items():
        for f in folder.iterdir():
            if f.is_file() and f.suffix not in (".py", ".pyc", ".so") and f not in ext_sources:
                assert any(f.match(pattern) for pattern in data.get(name, ())), f"{f} is not package data"
    assert (REPO / "viz_place" / "py.typed").is_file()


def _copy_sources(dest: Path) -> Path:
    """The files a wheel is built from (so the build leaves no build/ or egg-info in the repo)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(REPO / name, dest / name)
    for folder in set(SETUPTOOLS["package-dir"].values()):
        shutil.copytree(REPO / folder, dest / folder, ignore=ignore)
    return dest


def _run(args, cwd: Path, env: dict, timeout: float = 300) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{args} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.mark.slow
def test_wheel_installed_outside_the_repo_runs(tmp_path):
    """Build a wheel, install it into a fresh venv (third-party packages borrowed from this venv through a .pth
    file, so no download), and run the CLI and the explorer from a folder outside the repository."""
    src = tmp_path / "src"
    src.mkdir()
    _copy_sources(src)
    wheels = tmp_path / "wheels"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIZ_PLACE_SAMPLES", "PIP_USER")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation", "-w",
                            str(wheels), str(src)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    # setuptools' configuration warnings (a data folder missing from `packages`...) come as banners of "!!"
    # around a ...Warning class name; the build must print none (make install stays quiet)
    log = built.stdout + built.stderr
    assert "Warning" not in log and "!!" not in log, log[-3000:]
    wheel, = wheels.glob("viz_place-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for needed in ("viz_place/py.typed", "viz_place/data/rl_policy.npz", "viz_place/sample_graphs/residual.json",
                   "viz_place/widgets/explorer.py", "viz_place/solvers/dp/recursion.py"):
        assert needed in names
    # the DP's compiled kernel (setup.py) is built into the wheel where there is a C compiler
    compiled = any(n.startswith("viz_place/solvers/dp/_kernel.") and n.endswith(".so") for n in names)
    assert compiled or not (shutil.which("cc") or shutil.which("gcc")), names

    fresh = tmp_path / "fresh"
    _run([sys.executable, "-m", "venv", "--without-pip", str(fresh)], tmp_path, env)
    fresh_python = fresh / "bin" / "python"
    fresh_site = Path(_run([str(fresh_python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                           tmp_path, env).strip())
    # A path line in a .pth adds the folder but does not process that folder's own .pth files, so the repo's
    # editable install (a .pth + finder there) is not active in the fresh venv: only the third-party packages are.
    borrowed = [p for p in sys.path if p.endswith("site-packages") and os.path.isdir(p)]
    assert sysconfig.get_paths()["purelib"] in borrowed
    (fresh_site / "borrowed_third_party.pth").write_text("\n".join(borrowed) + "\n")
    _run([str(fresh_python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--force-reinstall",
          str(wheel)], tmp_path, env)

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    where = _run([str(fresh_python), "-c", "import viz_place; print(viz_place.__file__)"], outside, env).strip()
    assert Path(where).resolve().is_relative_to(fresh.resolve()), where
    assert not Path(where).resolve().is_relative_to(REPO)

    kernel = _run([str(fresh_python), "-c", "from viz_place.solvers.dp import recursion; print(recursion.kernel_name())"],
                  outside, env).strip()
    assert kernel == ("c" if compiled else "numpy")
    cli = str(fresh / "bin" / "viz-place")
    assert "nodes" in _run([cli, "info", "residual"], outside, env)
    solved = _run([cli, "solve", "residual", "--solver", "dp", "--json"], outside, env)
    assert '"status": "optimal"' in solved and '"bound_set": "pipeline"' in solved
    assert '"solver": "rl"' in _run([cli, "solve", "residual", "--solver", "rl", "-o", "mode=greedy", "--json"],
                                    outside, env)   # the shipped policy is package data
    explorer = _run([str(fresh_python), "-c",
                     "from viz_place.widgets import PlacementExplorer\n"
                     "ex = PlacementExplorer('residual', load_bokehjs=False)\n"
                     "import viz_place.widgets as w\n"
                     "print(ex.state.graph.name, ex.state.graph.num_nodes, w.__file__)"], outside, env).split()
    assert explorer[0] == "residual" and int(explorer[1]) > 0
    assert Path(explorer[2]).resolve().is_relative_to(fresh.resolve())
