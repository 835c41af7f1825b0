# The two set-up commands of the README: `make demo` and `make test`. Each one installs what it
# needs on a fresh Debian 12 machine (as root) before it runs.
PYTHON ?= python3
APT_PACKAGES = openmpi-bin libopenmpi-dev mpich libmpich-dev build-essential gfortran clang-format
STAMP = .setup.stamp

.PHONY: setup demo test lint typecheck unit bench clean

$(STAMP): pyproject.toml
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	  if [ -n "$$missing" ]; then apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing; fi; \
	fi
	$(PYTHON) -m pip install -q -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	commtune demo

lint: $(STAMP)
	ruff check .
	ruff format --check .
	clang-format --dry-run --Werror native/*/*.c

typecheck: $(STAMP)
	mypy

test: lint typecheck
	$(PYTHON) -m pytest -q -ra

clean:
	rm -rf $(STAMP) build src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
