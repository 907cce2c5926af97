# Two commands on a fresh machine: `make demo` (the main job) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test check bench-locomo bench-speed bench-cache bench-plans bench-updates clean

$(STAMP): modules/tool-agent-memory/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e "modules/tool-agent-memory[dev]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/agent-memory demo

test: $(STAMP)
	$(BIN)/python -m pytest

check: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy modules/tool-agent-memory/amplifier_module_tool_agent_memory

bench-locomo: $(STAMP)
	$(BIN)/python benchmarks/locomo.py

bench-speed: $(STAMP)
	$(BIN)/python benchmarks/speed.py

bench-cache: $(STAMP)
	$(BIN)/python benchmarks/cache.py

bench-plans: $(STAMP)
	$(BIN)/python benchmarks/plans.py

bench-updates: $(STAMP)
	$(BIN)/python benchmarks/updates.py

clean:
	rm -rf $(VENV)
