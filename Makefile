# iwlab: an initial-window-aware AQM on a P4 bottleneck, and the lab to measure it.
# `make help` lists the targets.

SHELL := /bin/bash
PY    := .venv/bin/python
P4ENV := . tools/p4env.sh
BUILD := build
P4SRC := $(wildcard p4src/*.p4 p4src/include/*.p4 p4src/include/rows/*.p4)
P4C_FLAGS := --arch v1model --std p4-16

SCENARIO ?= web6
REPS ?=
RUN ?=

.PHONY: help setup toolchain doctor build test bench mininet sweep paper report clean

help:
	@echo "make setup     install system packages, the pinned .venv, check the P4 toolchain (idempotent)"
	@echo "make toolchain [PREFIX=/opt/p4] [P4_SOURCES=dir]   build the pinned p4c, BMv2, PI from source (~65 min on 2 cores)"
	@echo "make toolchain TOFINO=1   also the Tofino compiler bf-p4c (open-source p4c backend) in /opt/p4/tofino, ~70 min"
	@echo "make toolchain TOFINO=1 TESTGEN=1   also P4Testgen (p4testgen) with its Tofino target, ~30 min more"
	@echo "make doctor    one line per capability: P4 compiler, BMv2, Mininet, netem, qdiscs, root, namespaces"
	@echo "make build     compile p4src/ with p4c into build/ (BMv2 JSON + P4Info)"
	@echo "make build TARGET=tofino|tofino2   the TNA program (p4src/tofino/) with bf-p4c into build/<target>/"
	@echo "make build TARGET=tofino2-red      the same for Tofino 2 with RED instead of CoDel and PIE"
	@echo "make build TARGET=tofino2-iwa      the same for Tofino 2 with IWA (and CoDel) instead of PIE"
	@echo "make test      run the test suite (runs setup first when needed)"
	@echo "make bench     benchmarks: BMv2 forwarding rate per AQM vs plain forwarding, model speed"
	@echo "make mininet SCENARIO=web6 [REPS=n]   the main job: run a scenario, keep raw data in results/ (RESUME=results/<run> continues one)"
	@echo "make sweep SWEEP=web-iw [JOBS=n]      a matrix of scenarios (experiments/sweeps/), resumable: RESUME=results/<run>; ONLY=regex runs the matching replications; ENGINE=ray [RAY_ADDRESS=host:port] on a Ray lab cluster"
	@echo "make paper [QUICK=1]                  the seeds beside the lab: sweep paper (or paper-quick) and its report; RESUME=results/<run>"
	@echo "make report RUN=results/<run>         report of a run from its data files: RUN/report/report.md + figures"

.setup-stamp: requirements.txt pyproject.toml tools/setup.sh mininet/accessnet/delayline.c $(wildcard tools/pion-rtc/*.go tools/pion-rtc/go.mod tools/pion-rtc/go.sum tools/pion-rtc/patched.sh tools/pion-rtc/patches/*/*/*/*.go) $(wildcard mininet/accessnet/bpf/*.c mininet/accessnet/bpf/*.h)
	@bash tools/setup.sh

setup:
	@bash tools/setup.sh

# The pinned P4 toolchain from source (tools/toolchain.versions); resumable. PREFIX, P4_SOURCES,
# JOBS, TOOLCHAIN_WORK_DIR, TOFINO, TESTGEN reach the script through the environment; ARGS=--dry-run etc.
toolchain:
	@bash tools/toolchain.sh $(if $(PREFIX),--prefix $(PREFIX)) $(if $(P4_SOURCES),--sources $(P4_SOURCES)) $(ARGS)

doctor:
	@$(P4ENV); /usr/bin/python3 tools/doctor.py

# One rule for every program in p4src/: build/<name>.json and build/<name>.p4info.txtpb
$(BUILD)/%.json: p4src/%.p4 $(P4SRC)
	@mkdir -p $(BUILD)
	@$(P4ENV); command -v p4c-bm2-ss >/dev/null || { echo "make build: p4c-bm2-ss not found on PATH or in $$P4_PREFIX/bin (see 'make setup')" >&2; exit 1; }
	$(P4ENV); p4c-bm2-ss $(P4C_FLAGS) -o $@ --p4runtime-files $(BUILD)/$*.p4info.txtpb $<

# TARGET=bmv2 (default): p4c-bm2-ss for BMv2. TARGET=tofino / tofino2: the open-source Tofino backend (bf-p4c,
# `make toolchain TOFINO=1`) compiles p4src/tofino/ for tna / t2na into build/<target>/ and regenerates
# docs/tofino.md from its resource reports; without bf-p4c it says so and builds nothing.
TARGET ?= bmv2
TNA_SRC := $(wildcard p4src/tofino/*.p4) p4src/include/constants.p4 p4src/include/wire.p4

ifeq ($(TARGET),bmv2)
build: $(BUILD)/bottleneck.json $(BUILD)/plain_forward.json
else ifneq ($(filter $(TARGET),tofino tofino2 tofino2-red tofino2-iwa),)
build:
	@$(P4ENV); bash tools/build_tofino.sh $(TARGET)
else
build:
	@echo "make build: TARGET=$(TARGET) is not a target here: bmv2 (default), tofino, tofino2, tofino2-red or tofino2-iwa" >&2; exit 2
endif

test: .setup-stamp
	@$(P4ENV); $(PY) -m pytest -rs tests

bench: .setup-stamp
	@$(P4ENV); $(PY) -m experiments.bench

# RESUME=results/<run> continues a run from its own record (run.json): its scenario, reps and switch. A
# SCENARIO given on the command line as well is passed on, and refused if it contradicts the record.
mininet: .setup-stamp
	@$(P4ENV); $(PY) -m accessnet.run $(if $(RESUME),--resume $(RESUME) $(if $(filter command line,$(origin SCENARIO)),--scenario $(SCENARIO)),--scenario $(SCENARIO)) $(if $(REPS),--reps $(REPS)) $(if $(JOBS),--jobs $(JOBS))

# Analysis only (no root, no network): needs the .venv, not the rest of 'make setup'.
sweep: .setup-stamp
	@test -n "$(SWEEP)$(RESUME)" || { echo "make sweep: say which, e.g. make sweep SWEEP=web-iw (experiments/sweeps/), or RESUME=results/<run>" >&2; exit 1; }
	@$(P4ENV); $(PY) -m accessnet.sweep $(SWEEP) $(if $(JOBS),--jobs $(JOBS)) $(if $(RESUME),--resume $(RESUME)) $(if $(ONLY),--only '$(ONLY)') $(if $(ENGINE),--engine $(ENGINE)) $(if $(RAY_ADDRESS),--ray-address $(RAY_ADDRESS))

# The seeds' tables beside the lab's (issue 13): the sweep paper (PAM'13 and IETF79 at paper scale; QUICK=1
# for paper-quick, about 1.5 hours), then its report. RESUME=results/<run> continues one and reports it.
paper: .setup-stamp
	@$(MAKE) --no-print-directory sweep $(if $(RESUME),RESUME=$(RESUME),SWEEP=paper$(if $(QUICK),-quick))
	@run="$(RESUME)"; test -n "$$run" || run=$$(ls -1dt results/*-sweep-paper$(if $(QUICK),-quick) | head -n 1); \
	$(MAKE) --no-print-directory report RUN="$$run"

report:
	@test -n "$(RUN)" || { echo "make report: say which run, e.g. make report RUN=results/<run>" >&2; exit 1; }
	@test -x $(PY) || { echo "make report: $(PY) not found; run 'make setup' first" >&2; exit 1; }
	$(PY) -m experiments.report $(RUN)

clean:
	rm -rf $(BUILD)
