# Developer and CI entry points for the headroom.kafka collection.
#
#   make venv       create/update the project virtualenv (.venv) from requirements/dev.txt (every list by purpose:
#                   requirements.txt for the collection, requirements/{pipeline,test,lint,bench}.txt), then install
#                   this checkout's headroom-kafka package (pyproject.toml) editable: headroom-pipeline, headroom-guard
#   make kafka-libs fetch Apache Kafka, the Strimzi quota plugin and the JMX exporter from Maven Central, once
#                   (KAFKA_VERSION picks another Kafka 4.x release; KAFKA_HOME uses an installation instead)
#   make sanity     ansible-test sanity for the collection
#   make lint       ruff format --check and ruff check (ruff.toml, 120 columns) on every Python file, ansible-lint
#                   with the production profile, and mypy on the typed public functions (mypy.ini)
#   make hosts-prerequisites  Debian's docker.io and debootstrap, for the fleet of test hosts (tests/hosts)
#   make pytest     pytest suite (tests/), on real Kafka brokers (HEADROOM_TEST_ENGINE set to sim: the model)
#   make test       sanity, lint (ruff, ansible-lint, mypy), pytest (molecule scenarios included), then the conformance
#                   suite on real Kafka
#   make molecule   every molecule scenario (extensions/molecule), each on its own test cluster (also part of pytest)
#   make conformance-kafka  the conformance suite of the test cluster (tests/kafka_testbed) against real Kafka brokers
#                   (pytest runs it against the model)
#   make demo     run the demo (scripts/demo.sh)
#   make demo-hosts  the demo's story over SSH on a fleet of test hosts (scripts/demo_hosts.sh)
#   make bench    run the benchmarks (figures, not pass/fail)
#   make clean    remove build artefacts and test output

PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.requirements.stamp

SHELL := /bin/bash

# Tools installed in the venv (ansible-test, molecule, ansible-playbook, ...)
# must be found on PATH by the recipes and the scripts they run.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: demo-hosts hosts-prerequisites venv kafka-libs sanity lint pytest molecule conformance-kafka test demo bench clean collection-link

# The collection link too: molecule's syntax step and ansible-lint resolve headroom.kafka through it.
venv: $(STAMP) collection-link

# Re-install only when a requirements list or the package's project file changed (or the venv is missing). The
# package goes in without dependencies (the lists bring them, pinned as the tests use them) and without build
# isolation (setuptools is in the venv), editable: the checkout's own files are what runs.
$(STAMP): requirements.txt $(wildcard requirements/*.txt) pyproject.toml
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --disable-pip-version-check --quiet -r requirements/dev.txt
	$(VENV)/bin/python -m pip install --disable-pip-version-check --quiet --no-deps --no-build-isolation -e .
	@touch $@

# Java 17+ and Maven are checked first; the jars land in build/kafka-<version>/libs and are reused afterwards.
kafka-libs: venv
	$(VENV)/bin/python -m kafka_testbed libs

sanity: venv
	scripts/ansible-test-sanity.sh

# The collection as ansible sees it installed: build/pytest-collections/ansible_collections/headroom/kafka -> here.
COLLECTIONS := $(CURDIR)/build/pytest-collections
collection-link:
	@mkdir -p $(COLLECTIONS)/ansible_collections/headroom
	@ln -sfn $(CURDIR) $(COLLECTIONS)/ansible_collections/headroom/kafka

lint: venv collection-link
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .
	ANSIBLE_COLLECTIONS_PATH=$(COLLECTIONS) $(VENV)/bin/ansible-lint --offline --profile production
	$(VENV)/bin/mypy --config-file mypy.ini -p ansible_collections.headroom.kafka.plugins.module_utils \
		-p headroom_pipeline -p headroom_guard

# Test files run on PYTEST_WORKERS processes (pytest-xdist), each file in one process so that a module's cluster is
# started once; the real-Kafka tests spend much of their time waiting on brokers and Ansible.
PYTEST_WORKERS ?= 2
PYTEST_PARALLEL := -n $(PYTEST_WORKERS) --dist loadfile

# The test hosts (tests/hosts, molecule) are containers built from Debian packages: Debian's docker.io (the daemon is
# started by the tests when none runs) and debootstrap; the alert rules are tested with Debian's prometheus (promtool,
# and a server the tests start). Installed with apt when missing (CI runs as root).
hosts-prerequisites:
	@command -v dockerd >/dev/null && command -v debootstrap >/dev/null && command -v promtool >/dev/null || { \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			docker.io debootstrap prometheus >/dev/null; }

# The fleets' Docker daemon, when the tests started it, is stopped once after every worker is done (pass or fail).
pytest: venv kafka-libs hosts-prerequisites
	HEADROOM_KEEP_DOCKERD=1 $(VENV)/bin/python -m pytest $(PYTEST_PARALLEL) tests; status=$$?; \
		$(VENV)/bin/python -m kafka_testbed hosts stop-daemon; exit $$status

molecule: venv kafka-libs hosts-prerequisites
	ANSIBLE_COLLECTIONS_PATH=$(COLLECTIONS) PYTHONPATH=$(CURDIR):$(COLLECTIONS) $(VENV)/bin/molecule test --all

# The same tests that pin the model, run against real brokers: every difference is fixed in the model or listed in
# kafka_testbed/README.md (model-only tests are skipped there with that reason).
conformance-kafka: venv kafka-libs
	HEADROOM_CONFORMANCE_ENGINE=kafka $(VENV)/bin/python -m pytest $(PYTEST_PARALLEL) tests/kafka_testbed --ignore=tests/kafka_testbed/unit

test: venv kafka-libs
	$(MAKE) --no-print-directory sanity
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory pytest
	$(MAKE) --no-print-directory conformance-kafka

demo: venv kafka-libs
	scripts/demo.sh

# The same story on a fleet of test hosts (SSH, systemd, the Apache layout) instead of local processes.
demo-hosts: venv kafka-libs hosts-prerequisites
	scripts/demo_hosts.sh

bench: venv
	$(VENV)/bin/python bench/cluster_bench.py $(BENCH_ARGS)
	$(VENV)/bin/python bench/log_dirs_info_bench.py
	$(VENV)/bin/python bench/client_quota_bench.py
	$(VENV)/bin/python bench/rolling_restart_bench.py
	$(VENV)/bin/python bench/pipeline_bench.py
	$(VENV)/bin/python bench/disk_guard_bench.py
	$(VENV)/bin/python bench/disk_guard_reaction_bench.py

clean:
	rm -rf build tests/output
