# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# On a machine without an NVIDIA driver, pin the CPU stack (see the comments in the file).
CONSTRAINTS ?= $(if $(shell command -v nvidia-smi 2>/dev/null),,constraints-cpu.txt)
STAMP := $(VENV)/.installed

.PHONY: venv test demo lint

venv: $(STAMP)

$(STAMP): pyproject.toml constraints-cpu.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(if $(CONSTRAINTS),--constraint $(CONSTRAINTS)) -e '.[test]'
	touch $(STAMP)

test: venv
	$(BIN)/python -m pytest -n auto -q

demo: venv
	$(BIN)/mrbot demo

lint: venv
	$(BIN)/ruff check .
