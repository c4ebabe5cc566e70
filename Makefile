# `make test` sets everything up from nothing and runs the whole suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test install conformance bench demo clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -n 2 -q

conformance: $(STAMP)
	$(PY) benchmarks/conformance.py

bench: $(STAMP)
	$(PY) benchmarks/sim_lstm.py

clean:
	rm -rf $(VENV) build *.egg-info

demo: $(STAMP)
	$(PY) samples/make_samples.py
	$(VENV)/bin/loopc run samples/running_sum.onnx -i samples/running_sum_inputs.npz
