# looprig: `make demo` and `make test` work on a fresh machine with Python 3.11 and make.
# Each target creates or updates the virtual environment .venv itself.
PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python

.PHONY: demo test bench lint format clean extension blender-demo blender-screenshots

$(PY):
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found; install Python 3.11 or run 'make PYTHON=/path/to/python3.11 ...'"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# looprig's lean runtime: what looprig.core needs (numpy, scipy, threadpoolctl)
$(VENV)/.runtime: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	touch $@

# + matplotlib (the plot extra): the demo writes a PNG of the curves
$(VENV)/.demo: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e ".[plot]"
	touch $@ $(VENV)/.runtime

# + every extra, the test tools and the bpy module for the Blender add-on tests (the dev extra)
$(VENV)/.dev: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $@ $(VENV)/.runtime $(VENV)/.demo

demo: $(VENV)/.demo
	$(VENV)/bin/looprig demo

test: $(VENV)/.dev
	$(PY) -m ruff check .
	$(PY) -m pytest

bench: $(VENV)/.runtime
	$(PY) bench/run.py
	$(PY) bench/boxer_singularity.py
	$(PY) bench/walker_gait.py
	$(PY) bench/serial_chain.py

# the Blender extension zip with bundled wheels (dist/looprig-<version>.zip), see docs/blender.md
extension: $(VENV)/.dev
	$(PY) blender_addon/build_extension.py --output-dir dist

# the Blender demo scene, retargeted and baked, as a .blend (needs the bpy module: the dev extra)
blender-demo: $(VENV)/.dev
	BLENDER_USER_RESOURCES=$$(mktemp -d) $(PY) -m looprig.blender_addon.demo --blend out/blender/fourbar_demo.blend

# the images of docs/blender.md, rendered from the demo scene (Cycles on the CPU)
blender-screenshots: $(VENV)/.dev
	$(PY) blender_addon/screenshots.py --output docs/images

lint: $(VENV)/.dev
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache .hypothesis out
