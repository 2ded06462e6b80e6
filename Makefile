# QuickNAT: `make deps` installs everything (as root, on Debian 12), `make test`
# runs every suite and ends with one summary. See README.md.

PYTHON      ?= /usr/bin/python3
VENV        := .venv
VPY         := $(VENV)/bin/python

# Debian packages the project needs (build, tests, labs). ccache: make test
# builds first, and a clone on a machine that built one before then compiles
# nothing again (75 s cold on 2 vCPUs, most of it quicknat-swx's protobuf code).
APT_PACKAGES := build-essential ccache pkg-config python3-venv python3-dev \
                libjansson-dev libcmocka-dev valgrind \
                libdpdk-dev dpdk-dev dpdk libpcap-dev \
                clang-14 libclang-rt-14-dev \
                iproute2 ethtool iputils-ping mininet iperf3 curl nftables iptables \
                traceroute tshark \
                libgrpc++-dev protobuf-compiler-grpc protobuf-compiler libprotobuf-dev

.PHONY: install uninstall all deps deps-apt deps-python deps-dpdk-internal build test lint bench bench-peers bench-qns bench-bmv2 bench-p4rt-clients bench-offload bench-swpath bench-swx bench-swx-ceiling bench-timers fuzz p4 constants commands generate run run-swpath run-bmv2 run-offload clean

all: build

deps: deps-apt deps-python deps-dpdk-internal

# The SWX pipeline's generated code needs two DPDK headers libdpdk-dev lacks:
# from Debian's source package of the installed DPDK (swpath/swx/).
deps-dpdk-internal: deps-apt
	swpath/swx/dpdk-internal-headers.sh .deps

# Idempotent: apt-get runs only when a package is missing. tshark decodes
# the IPFIX tests' messages (controller/tests/test_ipfix_tshark.py); its
# wireshark-common would ask whether non-root users may capture: no.
deps-apt:
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "apt-get install:$$missing"; \
	  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	else echo "deps: Debian packages present"; fi

deps-python: $(VENV)/.installed

# The product, then the labs' and the PTF harness's packages (no sys.path edits).
$(VENV)/.installed: controller/pyproject.toml topo/pyproject.toml ptf-tests/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e 'controller[dev]' -e topo -e ptf-tests
	touch $@

# Every CPU: quicknat-swx's generated P4Runtime protobuf code alone takes a
# minute to compile on one.
NPROC := $(shell nproc)
# ccache where it is installed (Debian's ccache; not required): a clone
# built before on this machine, or a `make clean`, compiles nothing again
# (issue #33: make test builds first). For another clone to hit too, its
# absolute paths must not reach the hash: CCACHE_BASEDIR makes those of
# the command line (-I of .deps/) relative, and the debug information
# names directories relative to the clone (gdb from the clone's top finds
# the sources), which ccache hashes in place of the working directory.
CCACHE := $(shell command -v ccache 2>/dev/null)
DEBUG_MAP := -fdebug-prefix-map=$(CURDIR)=.
BUILD_TOOLS := CC="$(CCACHE) $(CC) $(DEBUG_MAP)" CXX="$(CCACHE) $(CXX) $(DEBUG_MAP)"
ifneq ($(CCACHE),)
build: export CCACHE_BASEDIR := $(CURDIR)
endif
build:
	$(MAKE) -j$(NPROC) -C swpath all $(BUILD_TOOLS)
	$(MAKE) -j$(NPROC) -C swpath/src all $(BUILD_TOOLS)
	$(MAKE) -j$(NPROC) -C swpath/swx all $(BUILD_TOOLS)

# build first: the swpath suites (C tests, PTF and the lab through swpath) run
# the binary. PYTHON runs the Mininet lab's suite (it needs Debian's Mininet).
# The suites' own builds (swpath under ASan and TSan, the unit programs) go
# through ccache too: a warm cache saves them about 80 s of compiling
# (docs/test-time.md).
SUITE_TOOLS := $(if $(CCACHE),CCACHE_BASEDIR=$(CURDIR) $(BUILD_TOOLS))
test: $(VENV)/.installed build
	$(SUITE_TOOLS) PYTHON=$(PYTHON) $(VPY) tests/run_suites.py

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check controller tests bench ptf-tests topo swpath/tests swpath/swx/tests swpath/spec p4src
	$(VENV)/bin/ruff format --check controller tests bench ptf-tests topo swpath/tests swpath/swx/tests swpath/spec p4src
	$(VENV)/bin/mypy --config-file controller/pyproject.toml controller/quicknat
	$(VPY) tests/check_source_limits.py
	$(VPY) swpath/tests/check_layers.py

# Every benchmark; each prints its figures and writes bench/results/NAME.json.
bench: bench-qns bench-bmv2 bench-p4rt-clients bench-offload bench-swpath bench-swx bench-swx-ceiling bench-peers bench-timers

# QNS against a linear scan, C and Python: the paper's Table 1 on this machine.
# QNS against DPDK's rte_acl on the same rules (issue #16's third comparison).
bench-peers: $(VENV)/.installed build
	$(VPY) bench/peers_bench.py
	$(VPY) bench/rules_vs_flows.py
	$(VPY) bench/linux_compare.py

bench-qns: $(VENV)/.installed build
	$(VPY) bench/qns_bench.py

# The whole design in the namespace lab: the P4 program on quicknat-swx (DPDK's
# SWX pipeline) caching established flows, the controller as offload manager,
# two quicknat-swpath slow-path instances behind it; ping, curl, iperf3 and a
# burst of new flows through it, then where each session lives (as root).
# `make run LAB_SHELL=1` keeps it up.
run: $(VENV)/.installed build
	$(VPY) topo/run.py --switch swx $(if $(LAB_SHELL),--shell)

# quicknat-swpath alone as the NAT (no P4 switch).
run-swpath: $(VENV)/.installed build
	$(VPY) topo/run_swpath.py $(if $(LAB_SHELL),--shell)

# The same lab in Mininet with the NAT on BMv2 (needs simple_switch_grpc; says so if missing).
run-bmv2: $(VENV)/.installed
	$(PYTHON) topo/run_bmv2.py $(if $(CLI),--cli)

# Offload mode with BMv2 as the switch (docs/offload.md; needs simple_switch_grpc and root).
run-offload: $(VENV)/.installed build
	$(VPY) topo/run.py --switch bmv2 $(if $(LAB_SHELL),--shell)

# New-flow setup through the controller vs raw P4Runtime writes (needs simple_switch_grpc).
bench-bmv2: $(VENV)/.installed
	$(VPY) bench/bmv2_bench.py

# New flows in offload mode against controller mode, one lab, one run (issue #15;
# needs simple_switch_grpc and root).
bench-offload: $(VENV)/.installed build
	$(MAKE) -C swpath/bench -f Makefile.swpath
	$(VPY) bench/offload_bench.py

# The P4 program on quicknat-swx (DPDK SWX) against swpath's fast path and BMv2
# (where installed), in one run: forwarding, P4Runtime writes, new flows in
# controller and offload mode (issue #33; root; bench/results/swx.json).
bench-swx: $(VENV)/.installed build
	$(MAKE) -C swpath/bench -f Makefile.swpath
	$(VPY) bench/swx_bench.py

# What the SWX pipeline forwards on this machine (issue #33): DPDK's example
# programs and a hand-written NAT fast path (swpath/swx/bench/) through
# bench_swx's harness, beside the P4 program and swpath (root; 3 minutes;
# bench/results/swx_ceiling.json).
bench-swx-ceiling: $(VENV)/.installed build
	$(MAKE) -C swpath/bench -f Makefile.swpath
	$(VPY) bench/swx_ceiling.py

# swpath's timer wheel against DPDK's rte_timer on the session workload
# (issue #32; a DPDK process: under flock /tmp/quicknat-lab.lock).
bench-timers: $(VENV)/.installed build
	$(VPY) bench/timers_bench.py

# Our P4Runtime client against finsy.Switch on one BMv2 (issue #20).
bench-p4rt-clients: $(VENV)/.installed
	$(VPY) bench/p4rt_clients.py

# swpath, quicknat-swx (and the two DPDK headers its pipelines compile with),
# the controller (a venv of its own, a plain pip install: the P4
# program is package data), the systemd units (their @PREFIX@ made PREFIX) and
# the event logs' logrotate file. DESTDIR stages it all elsewhere (a package
# build): files go under DESTDIR, but name PREFIX, where they will run from.
# PIP_FLAGS: e.g. --no-index --find-links DIR without PyPI.
PREFIX ?= /usr/local
DESTDIR ?=
UNIT_DIR ?= /etc/systemd/system
LOGROTATE_DIR ?= /etc/logrotate.d
PIP_FLAGS ?=
VENV_DIR := $(DESTDIR)$(PREFIX)/lib/quicknat
UNIT_TEMPLATES := controller/systemd/quicknat-controller@.service.in \
                  controller/systemd/quicknat-exporter@.service.in \
                  swpath/systemd/quicknat-swpath@.service.in \
                  swpath/systemd/quicknat-swx@.service.in
install: build
	install -D -m 0755 swpath/build/app/quicknat-swpath $(DESTDIR)$(PREFIX)/bin/quicknat-swpath
	$(MAKE) -s -C swpath/swx install DESTDIR=$(abspath $(DESTDIR)) PREFIX=$(PREFIX)
	$(PYTHON) -m venv $(VENV_DIR)
	$(VENV_DIR)/bin/pip install -q $(PIP_FLAGS) ./controller
	@# a venv's scripts name the directory it was made in: make them name PREFIX's
	if [ -n "$(DESTDIR)" ]; then \
	  grep -rlI -- '$(DESTDIR)' $(VENV_DIR)/bin $(VENV_DIR)/pyvenv.cfg | \
	    xargs -r sed -i 's|$(DESTDIR)$(PREFIX)|$(PREFIX)|g'; \
	fi
	ln -sfn $(PREFIX)/lib/quicknat/bin/quicknat $(DESTDIR)$(PREFIX)/bin/quicknat
	for t in $(UNIT_TEMPLATES); do \
	  unit=$(DESTDIR)$(UNIT_DIR)/$$(basename $$t .in); \
	  install -d $$(dirname $$unit) && sed 's|@PREFIX@|$(PREFIX)|g' $$t > $$unit && chmod 0644 $$unit; \
	done
	install -D -m 0644 controller/systemd/quicknat.logrotate $(DESTDIR)$(LOGROTATE_DIR)/quicknat
	@echo "installed under $(DESTDIR)$(PREFIX); configurations go in /etc/quicknat/NAME.toml (units: quicknat-controller@NAME, quicknat-swpath@NAME, quicknat-swx@NAME, quicknat-exporter@NAME; systemctl daemon-reload)"

# What install wrote, and nothing else (/etc/quicknat and the logs stay).
uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/quicknat-swpath $(DESTDIR)$(PREFIX)/bin/quicknat
	$(MAKE) -s -C swpath/swx uninstall DESTDIR=$(abspath $(DESTDIR)) PREFIX=$(PREFIX)
	rm -rf $(VENV_DIR)
	for t in $(UNIT_TEMPLATES); do rm -f $(DESTDIR)$(UNIT_DIR)/$$(basename $$t .in); done
	rm -f $(DESTDIR)$(LOGROTATE_DIR)/quicknat

# Regenerate the compiled P4 artifacts (needs p4c-bm2-ss on PATH).
p4:
	$(MAKE) -C p4src

# The P4 program's constants for Python and C, from p4src/include/ (no p4c;
# make test fails when the committed ones are stale).
constants:
	$(PYTHON) p4src/gen_constants.py

# The swpath command language, from its one description
# (swpath/spec/commands.toml): swpath's parser table, the controller's
# vocabulary and the syntax in docs/swpath-commands.md (make test fails when
# the committed ones are stale).
commands:
	$(PYTHON) swpath/spec/gen_commands.py

# Every file generated from another source of truth.
generate: constants commands

clean:
	$(MAKE) -C swpath/src clean
	$(MAKE) -C swpath clean
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

# swpath's fast path (packets made in memory) next to testpmd macswap; see
# docs/benchmarks.md.
.PHONY: bench-swpath fuzz
bench-swpath: $(VENV)/.installed build
	$(MAKE) -C swpath/bench -f Makefile.swpath
	$(VPY) bench/swpath_bench.py

# libFuzzer over swpath's packet path for FUZZ_TIME seconds (default 300), then
# the PTF packet fuzzer (ptf-tests/tests/test_fuzz.py) with FUZZ_PACKETS
# packets (default 50000) from FUZZ_SEED through swpath and, where
# simple_switch_grpc is installed, BMv2 (as root).
FUZZ_PACKETS ?= 50000
FUZZ_SEED ?= $(shell date +%s)
fuzz: $(VENV)/.installed build
	$(MAKE) -C swpath/fuzz run $(if $(FUZZ_TIME),FUZZ_TIME=$(FUZZ_TIME))
	$(MAKE) -C swpath/fuzz run-commands $(if $(FUZZ_TIME),FUZZ_TIME=$(FUZZ_TIME))
	$(VPY) ptf-tests/run.py --target swpath --fuzz-packets $(FUZZ_PACKETS) --fuzz-seed $(FUZZ_SEED) fuzz
	if command -v simple_switch_grpc >/dev/null; then \
	  $(VPY) ptf-tests/run.py --target bmv2 --fuzz-packets $(FUZZ_PACKETS) --fuzz-seed $(FUZZ_SEED) fuzz; \
	else echo "fuzz: simple_switch_grpc not on PATH: BMv2 not fuzzed"; fi
