# slurm-hooks: `make demo` and `make test` work on a fresh clone (they create .venv themselves).
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
RUNTIME := $(VENV)/.runtime
INSTALL_LOG := $(VENV)/install.log
DEMO    := slurm_hooks/examples/cdmm-checkpoint-segfault

.PHONY: torch-venv venv demo test test-unit coverage-epilog lint typecheck install bench browser reliability cluster-up cluster-down clean pyslurm lane-test

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@ $(RUNTIME)

# The demo needs the runtime dependencies only; pip's output goes to a log, one line says where.
$(RUNTIME): pyproject.toml
	@echo "make demo: installing slurm-hooks and its runtime dependencies into $(VENV) (log: $(INSTALL_LOG))"
	@[ -x $(BIN)/pip ] || $(PY) -m venv $(VENV)
	@$(BIN)/pip install --disable-pip-version-check -e . > $(INSTALL_LOG) 2>&1 || { tail -n 20 $(INSTALL_LOG); exit 1; }
	@touch $@

venv: $(STAMP)  ## .venv with the dev tools (needs python3 with venv, and PyPI)

demo: $(RUNTIME)  ## diagnose the embedded headline example (runtime dependencies only; no site config read)
	@$(BIN)/slurm-hooks diagnose --config deploy/config.example.yaml $(DEMO)

test-unit: venv  ## everything that needs no Slurm daemons
	$(BIN)/pytest -q -m "not slurm"

test: venv browser pyslurm torch-venv  ## the whole suite, real Slurm included (needs root: installs and starts the dev cluster)
	$(MAKE) cluster-up
	SLURM_HOOKS_REQUIRE_CLUSTER=1 $(BIN)/pytest -q --durations=15 -m "not reliability"; rc=$$?; $(MAKE) cluster-down; exit $$rc

torch-venv:  ## the torch 2.13 CPU venv the dev cluster's job users run, /opt/slurm-hooks-torch (needs root and this machine kind's local torch wheel; deploy/dev-cluster/torch-venv.sh says how)
	deploy/dev-cluster/torch-venv.sh

PROPERTY_TESTS := tests/test_annotation.py tests/test_slurm_client.py tests/test_hooklog.py tests/test_bad_input.py \
	tests/test_bundle_limits.py tests/test_clocks_properties.py tests/test_hostile_scale.py \
	tests/test_config_hostile.py tests/test_rules_hostile.py tests/test_rules_selective.py tests/test_forged_lines.py \
	tests/test_prune_hostile.py tests/test_outputs_hostile.py tests/test_report_hostile.py tests/test_sandbox.py \
	tests/test_untrusted_parse.py tests/test_runs.py tests/test_verdict_witness.py tests/test_redteam.py tests/test_redteam2.py \
	tests/test_structured_logs.py tests/test_structured_records.py \
	tests/test_rt2_witness.py tests/test_rt2fix_bounds.py
reliability: venv pyslurm  ## property tests at full strength, then the fault matrix on the real dev cluster -> docs/reliability.md (needs root; builds pyslurm once: its rows run both backends)
	mkdir -p bench/out; rm -f bench/out/reliability.jsonl
	RELIABILITY_OUT=bench/out/reliability.jsonl HYPOTHESIS_PROFILE=reliability \
	  $(BIN)/pytest -q $(PROPERTY_TESTS) --junitxml=bench/out/reliability-properties.xml
	$(MAKE) cluster-up
	RELIABILITY_OUT=bench/out/reliability.jsonl SLURM_HOOKS_REQUIRE_CLUSTER=1 \
	  $(BIN)/pytest -q tests/test_reliability_cluster.py; rc=$$?; $(MAKE) cluster-down; \
	  $(BIN)/python -m tests.reliability bench/out/reliability.jsonl bench/out/reliability-properties.xml \
	    > docs/reliability.md; exit $$rc

.PHONY: accuracy
accuracy: venv  ## label, node and rank accuracy and the confidently wrong over tests/corpus (held-out apart), beside NVIDIA's restart agent -> docs/accuracy.md (its column needs bench/nvrx_venv.sh once, from PyPI; skipped without it)
	$(BIN)/python -m bench.accuracy --doc docs/accuracy.md

# The Epilog flow (hooks, collection, delivery, spool) through its fakes alone: >= 90% of its lines.
EPILOG_FLOW := hooks.epilog hooks.epilog_slurmctld hooks.post_job hooks.deps slurm.job collect deliver bundle.spool core.nofollow
coverage-epilog: venv  ## the Epilog flow's line coverage through its fakes (needs nothing else)
	$(BIN)/pytest -q -m "not slurm" -p no:cacheprovider $(foreach m,$(EPILOG_FLOW),--cov=slurm_hooks.$(m)) \
		--cov-report=term-missing --cov-fail-under=90 tests/test_epilog.py tests/test_epilog_slurmctld.py \
		tests/test_deliver.py tests/test_outbox.py tests/test_spool.py tests/test_job.py tests/test_job_logs.py \
		tests/test_kernel.py

lint: venv typecheck  ## mypy --strict on the package, ruff check, ruff format --check, vermin (CI runs this before the tests)
	$(BIN)/ruff check slurm_hooks tests bench
	$(BIN)/ruff format --check slurm_hooks tests bench
	$(BIN)/vermin -q -t=3.10- --violations --no-tips slurm_hooks  # requires-python >=3.10, checked

typecheck: venv  ## mypy --strict on slurm_hooks/ (settings in pyproject.toml)
	$(BIN)/mypy

bench: venv  ## speed claims, as ratios against baselines measured in the same run (needs only the venv)
	$(BIN)/python bench/prolog_imports.py
	$(BIN)/python bench/hook_startup.py
	$(BIN)/python -m bench.scan_throughput
	$(BIN)/python bench/epilog_wall.py
	$(BIN)/python bench/bounded_call.py
	$(BIN)/python bench/report_scale.py
	$(BIN)/python bench/multinode_latency.py
	$(BIN)/python -m bench.scale

browser:  ## Debian's chromium, which the HTML report test drives through playwright (no browser download)
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] || { echo "make browser: run as root" >&2; exit 1; }; \
	  export DEBIAN_FRONTEND=noninteractive; apt-get update -q >/dev/null && \
	  apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core >/dev/null; }

PREFIX    ?= /opt/slurm-hooks
HOOKS_DIR ?= $(PREFIX)/hooks
install:  ## self-contained install: PREFIX/venv, HOOKS_DIR scripts + slurm.conf.snippet (docs/operators/install.md)
	deploy/install.sh "$(PREFIX)" "$(HOOKS_DIR)"

# pyslurm for this host's Slurm, built from the vendored source once per machine (cached under
# ~/.cache/slurm-hooks/pyslurm by pyslurm, Slurm and Python version): into .venv for the tests, and
# for Debian's python3, which the dev cluster's hooks run (cluster-up installs it from the cache).
pyslurm: venv  ## needs root once (libslurm-dev, python3-dev, gcc); ~7 min the first time, then cached; nothing where no pyslurm exists (26.05)
	deploy/pyslurm/build-wheel.sh $(BIN)/python --install || [ $$? = 3 ]
	deploy/pyslurm/build-wheel.sh /usr/bin/python3 || [ $$? = 3 ]

cluster-up: venv  ## munge, MariaDB, slurmdbd, slurmctld, slurmd on loopback, slurm-hooks as hooks, from a clean state (needs root; installs the Debian packages it lacks). SLURM=24.11|25.05|25.11|26.05: that Slurm's lane (a cached Debian chroot in its own namespaces; needs debootstrap and Debian's archive once; 25.05 and 25.11 build Slurm from shared/vendor once, ~7 min each on 2 cores; 25.11 runs each job in its own PID namespace, as SUNK 8.1)
	deploy/dev-cluster/cluster-up.sh

cluster-down:  ## stops what cluster-up started, daemons tests restarted included (SLURM=...: that lane)
	deploy/dev-cluster/cluster-down.sh

# The Slurm-facing tests on another Slurm's lane (deploy/dev-cluster/lane-test.sh says which); a
# version that is the host's own is skipped (make test ran everything on it). .ci/run runs both.
lane-test: venv  ## SLURM=24.11|25.05|25.11|26.05: that lane up, its tests through deploy/dev-cluster/slurm-run, down (needs root)
	deploy/dev-cluster/lane-test.sh $(SLURM)

.PHONY: lanes
LANES ?= 24.11 25.05 25.11 26.05
lanes: venv  ## every lane's tests in turn (LANES=...), each up, tested, down; a summary line per lane (needs root; builds what is not cached)
	@rc=0; for v in $(LANES); do deploy/dev-cluster/lane-test.sh $$v || rc=1; done; exit $$rc

clean:  ## the venvs (.venv, the lanes' .lanes/) and bench/out; the caches in ~/.cache/slurm-hooks stay
	rm -rf $(VENV) .lanes bench/out
