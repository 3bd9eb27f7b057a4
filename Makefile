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
#   make hosts-prerequisites  Debian's docker.io, debootstrap and prometheus, for the test hosts and the alert tests
#
# The tests run in lanes. The directory of a test file gives its lane, which tests/conftest.py adds as a marker
# (kafka_testbed/lanes.py has the table); each lane's target runs pytest -m LANE, and a test that starts a cluster, a
# fleet, Spark or Prometheus its lane may not start fails, naming the lane it belongs to.
#   make unit         the unit tests (tests/unit, tests/kafka_testbed/unit): no Java, Maven, Kafka, Spark or Docker
#                     needed, under two minutes; also lints the changelog fragments
#   make integration  real Kafka clusters, playbook and module runs, the guard as a service, the alert rules on
#                     Prometheus (tests/integration)
#   make hosts        a fleet of test hosts: containers with systemd and sshd, real Kafka under systemd (tests/hosts)
#   make pipeline     the usage pipeline on Spark, local and standalone (tests/pipeline)
#   make molecule     every molecule scenario (extensions/molecule), on a test cluster or a fleet (tests/molecule)
#   make conformance  the test cluster's conformance suite (tests/kafka_testbed) on the model, then on real Kafka
#                     (make conformance-kafka: on real Kafka only)
#   make compat       the compatibility suite (tests/compat) on every Kafka release of the matrix, 3.3 to 4.4 in KRaft
#                     mode and the 3.x lines in ZooKeeper mode, then the conformance suite on each KRaft release;
#                     writes docs/docsite/rst/compatibility_matrix.rst (COMPAT_RELEASES, COMPAT_CONFORMANCE below)
#   make test         sanity, lint, then every lane in one pytest run (both workers shared across the lanes), then
#                     the conformance suite on real Kafka; everything runs, and it fails when something failed, or when
#                     a test left a process, a mount or a container behind
#   make ansible-core-matrix  sanity and the unit lane on every ansible-core release the collection supports (2.17 to
#                     2.21, each in a venv of its own; 2.20 and later on Python 3.12), and a play on real Kafka on the
#                     oldest and the newest (scripts/ansible-core-matrix.sh; CORE_RELEASES picks others)
#   make test-long    the tests make test leaves out to stay within its budget (kafka_testbed/lanes.py, LEFT_OUT_OF_CI,
#                     says why make test proves each one's claim without it); CI does not run them
#   make test-fresh   make test as on a fresh machine (a clean clone of HEAD, an empty HOME, an empty Docker store)
#   make test-one-core  make test on one CPU, as on a machine with half the CPU: the timeouts' margins must hold
#
#   make demo     run the demo (scripts/demo.sh)
#   make demo-hosts  the demo's story over SSH on a fleet of test hosts (scripts/demo_hosts.sh)
#   make bench    run the benchmarks (figures, not pass/fail)
#   make clean    remove build artefacts and test output
#
# A release: set version in galaxy.yml, then `PATH=$PWD/.venv/bin:$PATH antsibull-changelog release` records the
# fragments (changelogs/fragments, linted by make unit) as the release's entry in changelogs/changelog.yaml, writes
# CHANGELOG.rst and removes the fragments (docs/docsite/rst/guide_development.rst, Releases).

PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.requirements.stamp

SHELL := /bin/bash

# Tools installed in the venv (ansible-test, molecule, ansible-playbook, ...)
# must be found on PATH by the recipes and the scripts they run.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: demo-hosts hosts-prerequisites venv kafka-libs sanity lint unit integration hosts pipeline molecule conformance \
	conformance-kafka compat test test-long ansible-core-matrix test-fresh test-one-core demo bench clean collection-link hosts-image

# The collection link too: molecule's syntax step and ansible-lint resolve headroom.kafka through it.
venv: $(STAMP) collection-link

# Re-install only when a requirements list or the package's project file changed (or the venv is missing). The
# package goes in without dependencies (the lists bring them, pinned as the tests use them) and without build
# isolation (setuptools is in the venv), editable: the checkout's own files are what runs.
# VENV_EXTRA: more requirements beside the lists (make ansible-core-matrix: VENV=build/ansible-core-2.17
# VENV_EXTRA=ansible-core~=2.17.0, each release's venv made by this same rule).
$(STAMP): requirements.txt $(wildcard requirements/*.txt) pyproject.toml
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --disable-pip-version-check --quiet -r requirements/dev.txt $(VENV_EXTRA)
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
	ANSIBLE_COLLECTIONS_PATH=$(COLLECTIONS) $(VENV)/bin/antsibull-docs lint-collection-docs --plugin-docs \
		$(COLLECTIONS)/ansible_collections/headroom/kafka
	$(VENV)/bin/mypy --config-file mypy.ini -p ansible_collections.headroom.kafka.plugins.module_utils \
		-p headroom_pipeline -p headroom_guard

# Test files run on PYTEST_WORKERS processes (pytest-xdist), each file in one process so that a module's cluster is
# started once; the real-Kafka tests spend much of their time waiting on brokers and Ansible. tests/conftest.py's
# scheduler for loadfile keeps every file together and puts the tests that start a fleet of test hosts in one group,
# so that two fleets never run at once.
PYTEST_WORKERS ?= 2
PYTEST_PARALLEL := -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder
PYTEST := $(VENV)/bin/python -m pytest

# The test hosts (tests/hosts, molecule) are containers built from Debian packages: Debian's docker.io (the daemon is
# started by the tests when none runs) and debootstrap; the alert rules are tested with Debian's prometheus (promtool,
# and a server the tests start). Installed with apt when missing (CI runs as root).
hosts-prerequisites:
	@command -v dockerd >/dev/null && command -v debootstrap >/dev/null && command -v promtool >/dev/null || { \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			docker.io debootstrap prometheus >/dev/null; }

# The test hosts' image (debootstrap, then Kafka on it), built before pytest so that no test's timeout holds the build;
# it starts the fleets' Docker daemon when none answers.
hosts-image: venv kafka-libs hosts-prerequisites
	$(VENV)/bin/python -m kafka_testbed hosts image

# The fleets' Docker daemon, when the image build or the tests started it, is stopped once after every worker is done
# (pass or fail).
define fleet_lane
	status=0; $(MAKE) --no-print-directory hosts-image || status=1; \
		if [ $$status = 0 ]; then HEADROOM_KEEP_DOCKERD=1 $(PYTEST) $(PYTEST_PARALLEL) -m $(1) tests || status=1; fi; \
		$(VENV)/bin/python -m kafka_testbed hosts stop-daemon; exit $$status
endef

unit: venv
	$(PYTEST) $(PYTEST_PARALLEL) -m unit tests

integration: venv kafka-libs hosts-prerequisites
	$(PYTEST) $(PYTEST_PARALLEL) -m integration tests

hosts: venv kafka-libs hosts-prerequisites
	$(call fleet_lane,hosts)

pipeline: venv kafka-libs
	$(PYTEST) $(PYTEST_PARALLEL) -m pipeline tests

molecule: venv kafka-libs hosts-prerequisites
	$(call fleet_lane,molecule)

# The same tests that pin the model, run against real brokers: every difference is fixed in the model or listed in
# kafka_testbed/README.md (model-only tests are skipped there with that reason). Both engines run, whichever fails.
conformance: venv kafka-libs
	$(PYTEST) $(PYTEST_PARALLEL) -m conformance tests; model=$$?; \
		$(MAKE) --no-print-directory conformance-kafka; exit $$(( model || $$? ))

conformance-kafka: venv kafka-libs
	HEADROOM_CONFORMANCE_ENGINE=kafka $(PYTEST) $(PYTEST_PARALLEL) -m conformance tests $(if $(JUNIT),--junitxml=$(JUNIT))

# The compatibility suite on the releases of COMPAT_RELEASES (all: kafka_testbed/kafka_versions.py's matrix; or a list
# such as "3.9.1/zookeeper 4.4.0/kraft"), then the conformance suite on real Kafka of each KRaft release in
# COMPAT_CONFORMANCE (default: those of COMPAT_RELEASES; none to skip it), each with its JUnit report; then the table.
# A conformance test that fails on another release than the model's is a finding for the table, not a failure of this
# target; a compatibility check that fails is. (make test runs the suite on its default selection, the oldest 3.x line
# in both modes and the newest 4.x, inside its one pytest run.)
COMPAT_RELEASES ?= all
COMPAT_CONFORMANCE ?= $(COMPAT_RELEASES)
compat: venv kafka-libs
	@rm -rf build/compat; status=0; \
	HEADROOM_COMPAT_RELEASES="$(COMPAT_RELEASES)" $(PYTEST) $(PYTEST_PARALLEL) -m compat tests || status=1; \
	if [ "$(COMPAT_CONFORMANCE)" != none ]; then \
		for release in $$($(VENV)/bin/python -m kafka_testbed.kafka_versions --mode kraft "$(COMPAT_CONFORMANCE)"); do \
			KAFKA_VERSION=$${release%-kraft} HEADROOM_CONFORMANCE_ENGINE=kafka $(PYTEST) $(PYTEST_PARALLEL) -q \
				-m conformance tests --junitxml=build/compat/conformance/$$release.xml > /dev/null; \
			echo "conformance suite on Kafka $$release: exit $$?"; \
		done; \
	fi; \
	$(VENV)/bin/python -m kafka_testbed.compat_report || status=1; \
	exit $$status

# Every lane in one pytest run (every test file is in a lane, and the tests of all lanes share both workers: lane by
# lane, each lane's slowest file would run alone at its end), then the conformance suite once more on real Kafka. Each
# test still runs under its lane's rules. The Docker daemon the fleets started is stopped once at the end.
# Sanity, lint and the test hosts' image build run side by side, each one's output printed whole when it ends; the
# image is built before pytest so that no test's timeout holds its debootstrap (on one core that took a fleet's first
# test past its timeout). The tests of LEFT_OUT_OF_CI (kafka_testbed/lanes.py, with why each is not needed) are make
# test-long's. Each test's time is kept in build/test-results (JUnit XML), to see where the time goes.
RESULTS := build/test-results
test: venv kafka-libs hosts-prerequisites
	@$(MAKE) --no-print-directory -j3 --output-sync=target sanity lint hosts-image || { \
		$(VENV)/bin/python -m kafka_testbed hosts stop-daemon; exit 1; }; \
	status=0; \
	HEADROOM_KEEP_DOCKERD=1 $(PYTEST) $(PYTEST_PARALLEL) -m "not long" tests --junitxml=$(RESULTS)/test.xml || status=1; \
	$(VENV)/bin/python -m kafka_testbed hosts stop-daemon; \
	$(MAKE) --no-print-directory conformance-kafka JUNIT=$(RESULTS)/conformance-kafka.xml || status=1; \
	exit $$status

# The tests make test leaves out (marker long): not run by CI, run before a release and after changing what they test.
test-long: venv kafka-libs hosts-prerequisites
	$(call fleet_lane,long)

# The ansible-core releases of requirements/ansible-core.txt, each in build/ansible-core-<release>: run before a release
# and after changing what a release could treat differently (module arguments, Ansible's own APIs); CI runs make test
# on the venv's release only.
ansible-core-matrix: venv kafka-libs
	scripts/ansible-core-matrix.sh

# make test as CI may run it, on a fresh machine: a clean clone of HEAD, an empty HOME and a Docker daemon of its own on
# an empty store (scripts/test-fresh.sh; FRESH_TARGET=demo for make demo). Prints its wall time.
test-fresh:
	scripts/test-fresh.sh

# make test on one CPU (every process it starts inherits the affinity, the fleets' Docker daemon and containers too,
# when the run starts the daemon): a machine with half the CPU, on which every test must still pass, only slower.
test-one-core:
	taskset -c 0 $(MAKE) --no-print-directory test

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
