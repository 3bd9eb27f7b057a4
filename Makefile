# Developer and CI entry points for the headroom.kafka collection.
#
#   make venv     create/update the project virtualenv (.venv) from requirements.txt
#   make sanity   ansible-test sanity for the collection
#   make lint     ansible-lint with the production profile
#   make pytest   pytest suite (tests/)
#   make test     sanity, then pytest
#   make demo     run the demo (scripts/demo.sh)
#   make bench    run the benchmarks (figures, not pass/fail)
#   make clean    remove build artefacts and test output

PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.requirements.stamp

SHELL := /bin/bash

# Tools installed in the venv (ansible-test, molecule, ansible-playbook, ...)
# must be found on PATH by the recipes and the scripts they run.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: venv sanity lint pytest test demo bench clean collection-link

venv: $(STAMP)

# Re-install only when requirements.txt changed (or the venv is missing).
$(STAMP): requirements.txt
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --disable-pip-version-check --quiet -r requirements.txt
	@touch $@

sanity: venv
	scripts/ansible-test-sanity.sh

# The collection as ansible sees it installed: build/pytest-collections/ansible_collections/headroom/kafka -> here.
COLLECTIONS := $(CURDIR)/build/pytest-collections
collection-link:
	@mkdir -p $(COLLECTIONS)/ansible_collections/headroom
	@ln -sfn $(CURDIR) $(COLLECTIONS)/ansible_collections/headroom/kafka

lint: venv collection-link
	ANSIBLE_COLLECTIONS_PATH=$(COLLECTIONS) $(VENV)/bin/ansible-lint --offline --profile production

pytest: venv
	$(VENV)/bin/python -m pytest tests

test: venv
	$(MAKE) --no-print-directory sanity
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory pytest

demo: venv
	scripts/demo.sh

bench: venv
	$(VENV)/bin/python bench/cluster_bench.py $(BENCH_ARGS)
	$(VENV)/bin/python bench/log_dirs_info_bench.py
	$(VENV)/bin/python bench/client_quota_bench.py
	$(VENV)/bin/python bench/rolling_restart_bench.py
	$(VENV)/bin/python bench/pipeline_bench.py

clean:
	rm -rf build tests/output
