# The two commands a newcomer needs: `make run` and `make test`. Everything else builds on them.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
ORIGINS ?= 100000
CLUSTER_ORIGINS ?= 10000

# Python writes the bytecode of the modules it compiles (__pycache__, ignored by git), whatever
# the environment says: where PYTHONDONTWRITEBYTECODE is set, as on CI machines, every process
# compiled this project's modules again (each gunicorn worker, each `registry` command a test
# runs), and pytest rewrote every test module's asserts again in each of its processes.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install run stop test test-db test-cluster lint bench bench-changes bench-since bench-mirror loadtest faulttest cluster clean

$(STAMP): setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

## make run: embedded PostgreSQL (unless DATABASE_URL is set), a demo graph, gunicorn on :8000
run: install
	$(BIN)/registry serve --dev

## make stop: stop the embedded PostgreSQL under .registry/ (make run stops the one it started)
stop: install
	$(BIN)/registry db stop

## make test: the whole suite (PostgreSQL from DATABASE_URL, else an embedded one of the run's
## own, removed at the end), spread over TEST_WORKERS processes (pytest-xdist; a test file
## stays in one process; files in the order tests/conftest.py gives them, longest first)
TEST_WORKERS ?= auto
PARALLEL = -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder
test: install
	$(BIN)/python -m pytest $(PARALLEL)

## make test-db: the tests whose outcome depends on the database server, for CI's second run
## on another one (PostgreSQL 15 with ICU): the properties (every read path against a model),
## the loader, query plans, listing order and search, search memory, change sets, changes since
## any generation (loads overlapping, exports during loads, sweeps renumbered, retention),
## histories, facets and digests. The rest (the HTTP surface, auth, errors, end-to-end, the
## browser, packaging) runs once, in make test
SERVER_TESTS = tests/properties tests/loader tests/api/test_query_plans.py tests/api/test_listing.py \
	tests/api/test_search_memory.py tests/api/test_changes.py tests/api/test_changes_since.py \
	tests/api/test_catchup_retention.py tests/api/test_history.py \
	tests/api/test_origin_history.py tests/api/test_facets.py tests/api/test_facets_wide.py \
	tests/api/test_facets_pinned.py tests/api/test_digests.py tests/api/test_overlapping_loads.py \
	tests/api/test_change_exports_during_loads.py tests/api/test_since_sweep_renumbering.py \
	tests/api/test_default_retention.py
test-db: install
	$(BIN)/python -m pytest $(PARALLEL) -m "db and not e2e" $(SERVER_TESTS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

clean: stop
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache

## make bench [ORIGINS=100000]: performance figures (wrk, the production gunicorn set-up)
bench: install
	@command -v wrk >/dev/null || (apt-get update -qq && apt-get install -y -qq wrk)
	$(BIN)/python -m devtools.benchmark --origins $(ORIGINS) $(BENCH_ARGS)

## make bench-changes [ORIGINS=100000]: what the change set costs a load (docs/loading.md, What the change set costs): the
## demo, its 1 % twin and a wholly different document, loaded in a scratch database
bench-changes: install
	$(BIN)/python -m devtools.bench_changes --origins $(ORIGINS)

## make bench-since [ORIGINS=100000]: change sets kept longer than graphs (docs/api.md, Changes since any generation): a chain
## of 10 loads of 1 % twins, the storage kept, since=<oldest> pages and export (wrk)
bench-since: install
	@command -v wrk >/dev/null || (apt-get update -qq && apt-get install -y -qq wrk)
	$(BIN)/python -m devtools.bench_since --origins $(ORIGINS) $(BENCH_ARGS)

## make bench-mirror [ORIGINS=100000]: registry mirror (docs/mirror.md): first syncs into SQLite and
## PostgreSQL beside curl's export, a step of one twin, an unchanged poll, a step after missed loads, verify
bench-mirror: install
	$(BIN)/python -m devtools.bench_mirror --origins $(ORIGINS) $(BENCH_ARGS)

## make loadtest [ORIGINS=100000]: 60 s of mixed URLs through nginx at 64 connections (wrk)
loadtest: install
	@command -v wrk >/dev/null || (apt-get update -qq && apt-get install -y -qq wrk)
	@command -v nginx >/dev/null || test -x /usr/sbin/nginx || (apt-get update -qq && apt-get install -y -qq nginx)
	$(BIN)/python -m devtools.loadtest load --origins $(ORIGINS)

## make faulttest [ORIGINS=100000]: the same load while a private PostgreSQL stops for 10 s;
## then the cluster's report: standby, primary, an app host, PgBouncer, one at a time
faulttest: install
	@command -v wrk >/dev/null || (apt-get update -qq && apt-get install -y -qq wrk)
	@command -v nginx >/dev/null || test -x /usr/sbin/nginx || (apt-get update -qq && apt-get install -y -qq nginx)
	$(BIN)/python -m devtools.loadtest fault --origins $(ORIGINS)
	@command -v pgbouncer >/dev/null || test -x /usr/sbin/pgbouncer || (apt-get update -qq && apt-get install -y -qq pgbouncer)
	$(BIN)/python -m devtools.cluster_faults --origins $(ORIGINS)

## make cluster [CLUSTER_ORIGINS=10000]: primary, hot standby, PgBouncers, two gunicorn, nginx on loopback
cluster: install
	@command -v pgbouncer >/dev/null || test -x /usr/sbin/pgbouncer || (apt-get update -qq && apt-get install -y -qq pgbouncer)
	@command -v nginx >/dev/null || test -x /usr/sbin/nginx || (apt-get update -qq && apt-get install -y -qq nginx)
	$(BIN)/python -m devtools.cluster --origins $(CLUSTER_ORIGINS)

## make test-cluster: the fault scenarios on that cluster (PostgreSQL binaries, pgbouncer, nginx)
test-cluster: install
	REGISTRY_CLUSTER_TESTS=1 $(BIN)/python -m pytest tests/cluster -m cluster
