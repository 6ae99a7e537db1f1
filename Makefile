# Two commands from a fresh clone: `make demo` and `make test`. Both build .venv themselves.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test check lint typecheck bench sample clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	bash scripts/demo.sh $(BIN)

# The suite in parallel, one worker per core (pytest-xdist): ~4 minutes on 2 cores instead of ~6.5.
test: $(STAMP)
	$(BIN)/python -m pytest -n auto

# sample-memory/ is what dream makes of sample-memory/logs; regenerate it when dream changes.
sample: $(STAMP)
	$(BIN)/python scripts/make_sample_memory.py

check: lint typecheck test

typecheck: $(STAMP)
	$(BIN)/python -m mypy memdream

lint: $(STAMP)
	$(BIN)/python -m ruff check memdream tests bench

bench: $(STAMP)
	$(BIN)/python bench/lint_bench.py
	$(BIN)/python bench/ingest_bench.py
	$(BIN)/python bench/enqueue_bench.py
	$(BIN)/python bench/dream_bench.py
	$(BIN)/python bench/transcript_bench.py --sessions 240
	$(BIN)/python bench/recall_bench.py
	$(BIN)/python bench/knowledge_bench.py
	$(BIN)/python bench/locomo.py
	$(BIN)/python bench/session_start_bench.py
	$(BIN)/python bench/review_bench.py
	$(BIN)/python bench/mcp_bench.py
	$(BIN)/python bench/opt_out_bench.py
	$(BIN)/python bench/real_sessions.py
	$(BIN)/python bench/redactions.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
