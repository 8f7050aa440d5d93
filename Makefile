# make demo: set up .venv and run the main job; make test: set up and run the whole suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# make demo needs only the package and the notebook runner; the test extra holds those too.
DEMO_STAMP := $(VENV)/.installed-demo
# A second Triton for the engine tests (3.6: the GPU machine's version, with the range(n) bug on numpy >= 2.4).
VENV_ALT := .venv-triton36
PY_ALT := $(VENV_ALT)/bin/python
STAMP_ALT := $(VENV_ALT)/.installed
# The oldest Triton kernel_nb supports, for the engine tests too (no bf16 split dots, no interpreter
# dot_scaled, descriptor strides checked in elements: kernel_nb's compat layer covers each).
VENV_OLD := .venv-triton34
PY_OLD := $(VENV_OLD)/bin/python
STAMP_OLD := $(VENV_OLD)/.installed
# Triton's own language tests (make conformance): they need torch (CPU) and scipy.
VENV_CONF := .venv-conformance
PY_CONF := $(VENV_CONF)/bin/python
STAMP_CONF := $(VENV_CONF)/.installed
TRITON_TESTS ?= ../shared/triton-tests

.PHONY: demo test test-fast test-alt lint lab bench chromium conformance clean

# torch is optional for kernel_nb; the tests of its torch paths (tensors, triton.reinterpret,
# TensorDescriptor) run with the CPU build this machine keeps on disk (elsewhere pip may fetch a CUDA build).
TORCH ?= torch==2.13.0
# a library of Triton kernels for the recording tests (its autograd.Function forward/backward pairs);
# without its dependencies, which are torch and triton
LIGER ?= liger-kernel==0.8.5

$(STAMP): pyproject.toml setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test]"
	$(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q --no-deps "$(LIGER)"
	touch $(STAMP) $(DEMO_STAMP)

$(DEMO_STAMP): pyproject.toml setup.py
	@echo "== make demo [1/3]: a virtual environment in $(VENV)"
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "== make demo [2/3]: installing kernel-nb and the notebook runner (pip's progress below)"
	$(PY) -m pip install --disable-pip-version-check --progress-bar on -e ".[demo]"
	touch $(DEMO_STAMP)

$(STAMP_ALT): pyproject.toml setup.py
	test -x $(PY_ALT) || $(PYTHON) -m venv $(VENV_ALT)
	$(PY_ALT) -m pip install -q --upgrade pip
	$(PY_ALT) -m pip install -q "triton==3.6.0" "numpy>=2.4" pytest pytest-timeout
	$(PY_ALT) -m pip install -q --no-deps -e .
	$(PY_ALT) -m pip install -q ml_dtypes tqdm "$(TORCH)"
	touch $(STAMP_ALT)

$(STAMP_OLD): pyproject.toml setup.py
	test -x $(PY_OLD) || $(PYTHON) -m venv $(VENV_OLD)
	$(PY_OLD) -m pip install -q --upgrade pip
	$(PY_OLD) -m pip install -q "triton==3.4.0" "numpy>=2" pytest pytest-timeout
	$(PY_OLD) -m pip install -q --no-deps -e .
	$(PY_OLD) -m pip install -q ml_dtypes tqdm "$(TORCH)"
	touch $(STAMP_OLD)

$(STAMP_CONF): pyproject.toml setup.py
	test -x $(PY_CONF) || $(PYTHON) -m venv $(VENV_CONF)
	$(PY_CONF) -m pip install -q --upgrade pip
	$(PY_CONF) -m pip install -q "$(TORCH)" pytest pytest-xdist pytest-timeout scipy
	$(PY_CONF) -m pip install -q -e .
	touch $(STAMP_CONF)

# Debian's chromium drives the browser tests (Playwright is pointed at /usr/bin/chromium).
chromium:
	@test -x /usr/bin/chromium || (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium)

# TypeScript checks the viewer's JSDoc types (js/jsconfig.json: checkJs, strict; nothing is emitted),
# installed by npm from js/package-lock.json into js/node_modules.
JS_STAMP := js/node_modules/.installed

$(JS_STAMP): js/package.json js/package-lock.json
	cd js && npm ci --no-audit --no-fund
	touch $(JS_STAMP)

lint: $(STAMP) $(JS_STAMP)
	$(VENV)/bin/ruff check kernel_nb tests bench conformance tools setup.py
	$(VENV)/bin/ruff format --check kernel_nb tests bench conformance tools setup.py
	$(VENV)/bin/mypy
	js/node_modules/.bin/tsc --noEmit -p js/jsconfig.json
	$(VENV)/bin/lint-imports --no-cache
	$(PY) tools/module_sizes.py

test: $(STAMP) $(STAMP_ALT) $(STAMP_OLD) chromium lint
	$(PY) -m pytest -q -p no:cacheprovider tests
	$(PY_ALT) -m pytest -q -p no:cacheprovider tests/engine
	$(PY_OLD) -m pytest -q -p no:cacheprovider tests/engine

test-fast: $(STAMP)
	$(PY) -m pytest -q -x tests/engine

demo: $(DEMO_STAMP)
	@echo "== make demo [3/3]: running the notebooks headless"
	$(PY) -m kernel_nb.demo

# Triton's tests under stock TRITON_INTERPRET=1 and under kernel_nb, in one run, compared by test family.
conformance: $(STAMP_CONF)
	$(PY_CONF) -m conformance.run --tests $(TRITON_TESTS)

lab: $(STAMP)
	$(VENV)/bin/jupyter lab notebooks/

bench: $(STAMP)
	$(PY) bench/bench_engine.py

clean:
	rm -rf $(VENV) $(VENV_ALT) $(VENV_OLD) $(VENV_CONF) build *.egg-info test-artifacts
