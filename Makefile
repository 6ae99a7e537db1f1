# Two commands from a fresh clone: `make demo` and `make test`. Both build .venv themselves.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.installed-bench
BENCH_OUT := bench/out

.PHONY: demo test check lint typecheck bench sample clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# The bench extra (matplotlib, for bench/growth.png) only for `make bench`: `make test` installs what it did.
$(BENCH_STAMP): pyproject.toml $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	touch $(BENCH_STAMP)

demo: $(STAMP)
	bash scripts/demo.sh $(BIN)

# The suite in parallel, one worker per core (pytest-xdist): 3:19-3:46 on 2 cores for ~2,192 tests (2026-12-02,
# 17:2x; 3:56-4:57 earlier that day).
# memdream is byte-compiled first: the suite starts ~1,200 memdream processes, and where
# PYTHONDONTWRITEBYTECODE is set (CI machines, containers) a fresh clone has no .pyc, so each of them
# would compile every module it imports again (~100 ms a process).
test: $(STAMP)
	$(BIN)/python -m compileall -q memdream
	$(BIN)/python -m pytest -n auto

# sample-memory/ is what dream makes of sample-memory/logs; regenerate it when dream changes.
sample: $(STAMP)
	$(BIN)/python scripts/make_sample_memory.py

check: lint typecheck test

typecheck: $(STAMP)
	$(BIN)/python -m mypy memdream

lint: $(STAMP)
	$(BIN)/python -m ruff check memdream tests bench

# One bench script: what it prints goes to the terminal and to bench/out/NAME.log, its figures to
# bench/out/NAME.json, its exit code to bench/out/NAME.exit. A script that fails is recorded and the next one
# still runs; bench/results.py then writes bench/RESULTS.md and exits 1 if one failed.
bench_run = { $(BIN)/python -u bench/$(1).py --json $(BENCH_OUT)/$(1).json $(2) 2>&1; \
	echo $$? > $(BENCH_OUT)/$(1).exit; } | tee $(BENCH_OUT)/$(1).log

# Every benchmark, once each (~30 minutes on 2 cores; locomo and real_sessions need ../shared/bench/), then
# bench/profiles.py (~4 minutes: where the time of each missed speed target goes, bench/PROFILES.md), then
# bench/RESULTS.md (each missed figure linked to its profile) and bench/growth.png.
bench: $(BENCH_STAMP)
	rm -rf $(BENCH_OUT) && mkdir -p $(BENCH_OUT)
	# Byte-compiled as pip installs it: with PYTHONDONTWRITEBYTECODE set, an edited module would be
	# compiled again by every process the scripts start, and its figures would carry that.
	$(BIN)/python -m compileall -q memdream
	$(call bench_run,lint_bench)
	$(call bench_run,ingest_bench)
	$(call bench_run,enqueue_bench)
	$(call bench_run,dream_bench)
	$(call bench_run,transcript_bench,--sessions 240)
	$(call bench_run,growth_bench)
	$(call bench_run,recall_bench)
	$(call bench_run,knowledge_bench)
	$(call bench_run,preference_bench)
	$(call bench_run,locomo)
	$(call bench_run,session_start_bench)
	$(call bench_run,review_bench)
	$(call bench_run,mcp_bench)
	$(call bench_run,opt_out_bench)
	$(call bench_run,real_sessions)
	$(call bench_run,redactions)
	$(call bench_run,profiles)
	$(BIN)/python bench/results.py $(BENCH_OUT) --output bench/RESULTS.md

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
