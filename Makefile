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

.PHONY: install browser demo test check bench-locomo bench-speed bench-cache bench-plans bench-updates clean

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

# Debian's Chromium for the viewer's browser tests (Playwright drives it; `playwright install` would
# download a browser from a host this machine cannot reach). Installed when missing and apt-get can
# (root); otherwise the tests marked `browser` skip, saying so.
CHROMIUM ?= /usr/bin/chromium
browser:
	@if [ -x "$(CHROMIUM)" ]; then :; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null) \
		&& echo "installed Debian's chromium for the browser tests" \
		|| echo "SKIP: could not install chromium: the browser tests will skip"; \
	else echo "SKIP: no $(CHROMIUM) and no root apt-get: the browser tests will skip"; fi

install: $(STAMP) $(VENDOR_STAMP) browser

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
