# tide: thin wrapper around CMake. `make demo` and `make test` do all set-up.
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
DEMO_OUT   ?= out/demo
DEBS       := cmake gcc make pkg-config time python3 libjansson-dev libyaml-dev libcmocka-dev libmicrohttpd-dev libsqlite3-dev libslurm-dev
# what the end-to-end tests start: a real local Slurm (scripts/slurm-local.sh), curl, and
# openssl (a test CA for the HTTPS test); headless Chromium driven from node over the
# DevTools protocol (tests/e2e/ui_live.sh)
# prometheus: promtool checks and unit-tests examples/prometheus/tide-rules.yml;
# systemd: systemd-analyze verify of examples/systemd/tide.service; npm: the
# OpenAPI validator (tests/openapi, `npm ci` into $(BUILD)/npm)
TEST_DEBS  := curl openssl slurmctld slurmd slurm-client munge chromium prometheus systemd man-db
# commands installed from a Debian package only when missing (a machine may have Node.js and
# npm from another source, whose nodejs package conflicts with Debian's npm): COMMAND:PACKAGE
TEST_TOOLS := node:nodejs npm:npm

PREFIX     ?= /usr/local
DESTDIR    ?=

.PHONY: install deb npm-deps all deps test-deps build test test-fast asan demo bench bench-rl bench-step bench-federation bench-policy bench-serve bench-latency bench-slurm bench-deps bench-questions fuzz clean

all: build

# Install missing Debian packages (idempotent; quiet when all are present).
deps:
	@missing=""; for p in $(DEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

test-deps:
	@missing=""; for p in $(TEST_DEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	for t in $(TEST_TOOLS); do command -v $${t%%:*} >/dev/null 2>&1 || missing="$$missing $${t#*:}"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

$(BUILD)/Makefile: CMakeLists.txt | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

build: deps $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS)

# make install PREFIX=/usr DESTDIR=/tmp/stage: the binary, tide(1), the bash
# completion, docs and examples, the systemd unit.
install: build
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix "$(PREFIX)"

# A Debian package (dpkg-deb, no debhelper): out/tide_VERSION_ARCH.deb
deb: build
	bash scripts/mkdeb.sh $(BUILD) out

# The OpenAPI validator (tests/openapi/package-lock.json) into $(BUILD)/npm:
# the only network access of make test; the test itself runs offline.
npm-deps: $(BUILD)/Makefile
	@mkdir -p $(BUILD)/npm && cp tests/openapi/package.json tests/openapi/package-lock.json $(BUILD)/npm/
	@cd $(BUILD)/npm && { cmp -s package-lock.json node_modules/.tide-lock 2>/dev/null || \
	  { npm ci --no-audit --no-fund --silent && cp package-lock.json node_modules/.tide-lock; }; }

# Every test in a normal build, then again under ASan+UBSan.
test: build asan test-deps npm-deps
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	ln -sfn $(abspath $(BUILD))/npm $(ASAN_BUILD)/npm # the validator, installed once
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS)

test-fast: build test-deps npm-deps
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DTIDE_SANITIZE=ON >/dev/null
	cmake --build $(ASAN_BUILD) -j $(JOBS)

demo: build
	$(BUILD)/tide gen --scenario seed200 --days 14 --seed 1 --out $(DEMO_OUT)
	$(BUILD)/tide sim --cluster 25x8:H100 --services $(DEMO_OUT)/services.csv \
	  --demand $(DEMO_OUT)/demand.csv --jobs $(DEMO_OUT)/jobs.csv \
	  --policy isolated,static,preempt,k8s,elastic,timeshare --split 80:120 --reserve 40 \
	  --horizon 14d --seed 1 --out $(DEMO_OUT)/sim --report $(DEMO_OUT)/report.html
	@echo "report: $(abspath $(DEMO_OUT)/report.html) (open it in a browser)"

# The simulator's scaling series (bench/results.md, bench/scaling.svg; BIG=1
# adds the 131,072-GPU run; `bash bench/run.sh build --short` for CI), one
# engine step at 16,384 GPUs, the policy-quality table on real traces, then
# the daemon's (when `tide serve` is built).
bench: build
	bash bench/run.sh $(BUILD)
	$(MAKE) --no-print-directory bench-step
	bash bench/policy_quality.sh $(BUILD)
	@if $(BUILD)/tide serve --help >/dev/null 2>&1; then $(MAKE) --no-print-directory bench-serve bench-latency; \
	else echo "bench: tide serve not built, skipping bench-serve"; fi

# One engine step at 16,384 GPUs, ~10,000 queued jobs, ~2,000 leases: P50/P99
# wall and thread-CPU time (bench/engine_step_bench.c, the core driven directly).
bench-step: build
	$(BUILD)/bench/engine_step_bench

# Two simulated sites, one tide each, with and without demand routed between
# them (docs/scale.md).
bench-federation: build
	python3 bench/federation.py $(BUILD)/tide $$(mktemp -d /tmp/tide-fed.XXXXXX)

# Every policy on six workloads built from ../shared/traces (TIDE_TRACES), 14
# days on 64x8: writes bench/policy_results.md (about a minute; skipped when the
# traces are absent). DAYS=2 or `bash bench/policy_quality.sh build --short` for CI.
bench-policy: build
	bash bench/policy_quality.sh $(BUILD)

# The design sources' minimal experiment (isolated, static, elastic, elastic +
# bulk-traffic QoS; 2x burst, rank failures, shared storage): prints the answers
# to its five questions as Markdown (seconds; README.md, "The minimal experiment").
bench-questions: build
	bash bench/questions.sh $(BUILD)

# Load generator and a local Slurm for bench/serve_bench.sh (tide vs Slurm).
BENCH_DEBS := wrk curl slurmctld slurmd slurm-client munge
bench-deps:
	@missing=""; for p in $(BENCH_DEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

# The daemon under wrk beside slurmctld: writes bench/serve_results.md
# (SLURM=0: tide's side only, when the local Slurm is in use elsewhere).
bench-serve: build bench-deps
	bash bench/serve_bench.sh $(BUILD)

# API latency (P50/P99/worst of submit, get, list) while the daemon steps a
# 16,384-GPU cluster with 10,000 queued jobs: appended to bench/serve_results.md.
bench-latency: build bench-deps
	bash bench/serve_latency.sh $(BUILD)

# tide elastic vs Slurm's own partition-priority preemption on one local Slurm
# cluster, same workload: writes bench/slurm_compare_results.md (about 15 min).
bench-slurm: build bench-deps
	bash bench/slurm_compare.sh $(BUILD)

FUZZ_DEBS := clang libclang-rt-14-dev
fuzz: deps
	@missing=""; for p in $(FUZZ_DEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Debug -DTIDE_FUZZ=ON >/dev/null
	cmake --build $(FUZZ_BUILD) -j $(JOBS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) out

# Agentic RL (docs/rl.md): one RL job on the seed200 cluster (2 days of its
# inference demand, the forecast warm from another week of it), rollouts from
# a fixed pool at min, a fixed pool at max, and tide's lent pool, side by
# side. Deterministic.
RL_OUT ?= out/bench-rl
bench-rl: build
	$(BUILD)/tide gen --scenario seed200 --days 2 --out $(RL_OUT)/workload >/dev/null
	$(BUILD)/tide gen --scenario seed200 --days 7 --seed 2 --out $(RL_OUT)/history >/dev/null
	$(BUILD)/tide sim --cluster 25x8:H100 --services $(RL_OUT)/workload/services.csv \
	  --demand $(RL_OUT)/workload/demand.csv --demand-history $(RL_OUT)/history/demand.csv \
	  --rl examples/rl/rl.csv --horizon 2d --out $(RL_OUT)
