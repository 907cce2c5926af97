# Two commands on a fresh machine: `make demo` (the main job) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The real loop-basic and loop-streaming orchestrators (not on any registry here) for the integration
# tests and benchmarks/recall.py: ../shared/vendor beside the repository (CI), or AGENT_MEMORY_VENDOR_DIR.
VENDOR ?= $(or $(AGENT_MEMORY_VENDOR_DIR),../shared/vendor)
ORCHESTRATORS := amplifier-module-loop-basic amplifier-module-loop-streaming
VENDOR_STAMP := $(VENV)/.orchestrators

.PHONY: install demo test check bench-locomo bench-speed bench-cache bench-plans bench-updates clean

$(STAMP): modules/tool-agent-memory/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e "modules/tool-agent-memory[dev]"
	touch $(STAMP)

# Built from a writable copy in a temporary folder: the vendor folder is read-only and a build backend
# may write beside its sources. Without the folder the step is skipped (the tests that need the
# orchestrators then skip, saying so) and tried again by the next `make install`.
$(VENDOR_STAMP): $(STAMP)
	@if [ -d "$(VENDOR)/amplifier-module-loop-basic" ] && [ -d "$(VENDOR)/amplifier-module-loop-streaming" ]; then \
		tmp=$$(mktemp -d) && \
		for name in $(ORCHESTRATORS); do cp -R "$(VENDOR)/$$name" "$$tmp/$$name" || exit 1; done && \
		chmod -R u+w "$$tmp" && \
		$(BIN)/pip install --quiet $(addprefix "$$tmp"/,$(ORCHESTRATORS)); rc=$$?; rm -rf "$$tmp"; \
		if [ $$rc -ne 0 ]; then exit $$rc; fi; touch $(VENDOR_STAMP); \
		echo "installed loop-basic and loop-streaming from $(VENDOR)"; \
	else \
		echo "SKIP: $(VENDOR) not found: loop-basic and loop-streaming not installed (their tests will skip)"; \
	fi

install: $(STAMP) $(VENDOR_STAMP)

demo: install
	$(BIN)/agent-memory demo

test: install
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
