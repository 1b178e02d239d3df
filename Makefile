# looprig: `make demo` and `make test` work on a fresh machine with Python 3.11 and make.
# Each target creates or updates the virtual environment .venv itself.
PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
# a second environment with numpy 2.x (Blender 5.1+ runs numpy 2) and no bpy, for the non-Blender tests
VENV2  := .venv-numpy2
PY2    := $(VENV2)/bin/python

.PHONY: demo test test-numpy2 sound-libraries bench bench-peers lint format clean extension blender-demo blender-screenshots

$(PY):
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found; install Python 3.11 or run 'make PYTHON=/path/to/python3.11 ...'"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# looprig's lean runtime: what looprig.core needs (numpy, scipy, threadpoolctl)
$(VENV)/.runtime: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	touch $@

# the full runtime: + the robot-file readers (the cad extra: MuJoCo, trimesh, PyYAML...), so that
# `looprig info`/`retarget` read your own MJCF and URDF files, and matplotlib (the plot extra): the
# demo writes a PNG of the curves
$(VENV)/.demo: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e ".[cad,plot]"
	touch $@ $(VENV)/.runtime

# + every extra, the test tools and the bpy module for the Blender add-on tests (the dev extra);
# the sound tests need the PortAudio library (sounddevice loads it) and a JACK server on its dummy
# driver (a real-time clock without sound hardware): installed with apt-get where there is one
$(VENV)/.dev: pyproject.toml | $(PY) sound-libraries
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $@ $(VENV)/.runtime $(VENV)/.demo

sound-libraries:
	@if ! ldconfig -p | grep -q libportaudio.so.2 || ! command -v jackd >/dev/null; then \
		if command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libportaudio2 jackd2 >/dev/null; \
		else echo "note: install PortAudio and jackd for the sound tests (they skip without them)"; fi; \
	fi

# every extra but bpy (the test extra), with numpy 2.x
$(VENV2)/.test: pyproject.toml | sound-libraries
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found"; exit 1; }
	test -x $(PY2) || $(PYTHON) -m venv $(VENV2)
	$(PY2) -m pip install --quiet --upgrade pip
	$(PY2) -m pip install --quiet -e ".[test]" "numpy>=2"
	touch $@

demo: $(VENV)/.demo
	$(VENV)/bin/looprig demo

# lint, every test with numpy 1.26 and bpy 5.0.1 (.venv), then the non-Blender tests with numpy 2.x
test: $(VENV)/.dev
	$(PY) -m ruff check .
	$(PY) -m pytest
	$(MAKE) --no-print-directory test-numpy2

test-numpy2: $(VENV2)/.test
	$(PY2) -c "import numpy, sys; print('numpy', numpy.__version__); sys.exit(int(numpy.__version__.split('.')[0]) < 2)"
	$(PY2) -m pytest --ignore=tests/blender -p no:cacheprovider

bench: $(VENV)/.runtime
	$(PY) bench/run.py
	$(PY) bench/boxer_singularity.py
	$(PY) bench/walker_gait.py
	$(PY) bench/serial_chain.py
	$(PY) bench/reachy_mini.py

# looprig (whole clip and per frame) against PlaCo and Pinocchio + numpy Gauss-Newton on the
# shared peer benchmark, interleaved in one sitting (see docs/performance.md). The peers live in
# their own virtual environment (PEERS); RUNS passes, results in out/bench-peers; then the ratios
# within each pass (bench/peer_ratios.py) and what one SQP iteration costs looprig at least
# (bench/floors.py).
PEER_BENCH ?= ../shared/peer-bench
PEERS      ?= $(HOME)/.cache/looprig-peers
RUNS       ?= 3
bench-peers: $(VENV)/.dev
	@test -x $(PEERS)/bin/python || { $(PYTHON) -m venv $(PEERS) && $(PEERS)/bin/pip install --quiet -r $(PEER_BENCH)/requirements-peers.txt; }
	PEERS_PY=$(PEERS)/bin/python LOOPRIG_BENCH="$(abspath $(PY)) $(abspath bench/peers.py)" \
		PEER_BENCH=$(abspath $(PEER_BENCH)) RUNS=$(RUNS) OUT=$(abspath out/bench-peers) $(PEER_BENCH)/side_by_side.sh
	$(PY) bench/peer_ratios.py out/bench-peers
	PEER_BENCH=$(abspath $(PEER_BENCH)) $(PY) bench/floors.py

# the Blender extension: one zip per platform (dist/looprig-<version>-<platform>.zip) with the
# wheels for Python 3.11 and 3.13; downloads are cached in ~/.cache/looprig-wheels. See docs/blender.md
extension: $(VENV)/.dev
	$(PY) blender_addon/build_extension.py --all-platforms --output-dir dist

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
	rm -rf $(VENV) $(VENV2) build *.egg-info .pytest_cache .ruff_cache .hypothesis out
