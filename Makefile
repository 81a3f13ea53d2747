# The two commands the README promises: `make run` and `make test`. Both build their own venv.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PORT   ?= 8501
STAMP  := $(VENV)/.installed

.PHONY: run test test-models bench bench-load chromium servers clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[test]"
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/python -m ui.launch --server.port $(PORT) --server.headless true

# Browser tests drive Debian's chromium (Playwright cannot download its own browser here).
chromium:
	@if command -v chromium >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = "0" ]; then \
	  echo "Installing Debian's chromium for the browser tests..."; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else \
	  echo "The browser tests need Debian's 'chromium' package. Install it with: sudo apt-get install chromium"; \
	  exit 1; \
	fi

# The store tests also run on PostgreSQL (a throwaway cluster from Debian's binaries) and the
# replica test puts nginx in front of two app servers: both come from Debian's packages.
servers:
	@missing=""; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	{ command -v nginx || test -x /usr/sbin/nginx; } >/dev/null 2>&1 || missing="$$missing nginx"; \
	if [ -z "$$missing" ]; then :; \
	elif [ "$$(id -u)" = "0" ]; then \
	  echo "Installing Debian's$$missing for the store and replica tests..."; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	else \
	  echo "The store and replica tests need Debian's$$missing. Install with: sudo apt-get install$$missing"; \
	  exit 1; \
	fi

test: $(STAMP) chromium servers
	$(BIN)/python -m pytest -n 2 --dist loadfile

test-models: $(STAMP)
	$(BIN)/python -m pytest tests/models tests/test_contract.py -q

bench: $(STAMP)
	$(BIN)/python -m bench

# 20 browser sessions against 1 replica (DuckDB), 1 replica (PostgreSQL), 2 replicas behind nginx.
bench-load: $(STAMP) chromium servers
	$(BIN)/python -m bench.load --compare

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
