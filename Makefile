# viz_place — the two commands a newcomer needs: `make lab` and `make test`.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install lab test test-fast bench samples docs clean

# the compiled parts (the DP's kernel, the set bound's pricing DP) are built at install (setup.py): a change to
# their sources reinstalls, so they are rebuilt
KERNEL_SOURCES := $(wildcard viz_place/solvers/dp/_kernel*.c viz_place/solvers/dp/_kernel*.h viz_place/solvers/milp/_pricing*.c viz_place/solvers/milp/_pricing.h)

$(STAMP): pyproject.toml setup.py $(KERNEL_SOURCES)
	@command -v $(PY) >/dev/null 2>&1 || { echo "error: $(PY) not found; viz_place needs Python 3.11 (set PY=...)" >&2; exit 2; }
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip setuptools wheel
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP)

# LAB_ARGS: extra flags for JupyterLab, e.g. `make lab LAB_ARGS="--no-browser --port 8899"`.
LAB_ARGS ?=
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

lab: $(STAMP)
	$(BIN)/jupyter lab notebooks/explorer.ipynb $(ROOT_FLAG) $(LAB_ARGS)

# TEST_JOBS: pytest-xdist worker processes (one per core here; 0 = run in this process, one test at a time).
# --dist loadfile keeps a file's tests (and its module fixtures: a JupyterLab server, a Dask cluster) in one worker.
TEST_JOBS ?= 2
test: $(STAMP)
	bash scripts/ensure-browser.sh
	$(BIN)/python -m pytest -q -n $(TEST_JOBS) --dist loadfile --durations=20

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -n $(TEST_JOBS) --dist loadfile -m "not browser and not slow"

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

# The course, executed and rendered to HTML (build/course/); `make docs FAST=1` runs the quick setting.
FAST ?= 0
docs: $(STAMP)
	VIZ_PLACE_COURSE_FAST=$(FAST) $(BIN)/jupyter nbconvert --to html --execute --ExecutePreprocessor.timeout=900 \
		--output-dir build/course notebooks/[0-9][0-9]-*.ipynb
	@echo "course rendered: build/course/*.html"

samples: $(STAMP)
	$(BIN)/python scripts/make_samples.py
	$(BIN)/python scripts/import_light_models.py
	$(BIN)/python scripts/make_module_samples.py

clean:
	rm -rf $(VENV) build *.egg-info viz_place/solvers/dp/_kernel*.so viz_place/solvers/milp/_pricing*.so
