# SPDX-License-Identifier: GPL-2.0
#
# sroce: build, install, test and demo.
#
#   make                      sroce.ko for $(KVER) + user space (provider, tools, unit tests)
#   make install DESTDIR=D    the module, the provider and its .driver file, nothing else
#   make test                 style gates, unit tests on the host, then the VM suites (QEMU guests):
#                             all of them on $(KVER), a subset on each other kernel series
#                             installed (KVER_OTHERS); make test KVER=K: all of them on K only
#   make check-style          checkpatch --strict on kernel/, LINUX_VERSION_CODE only in compat.h
#   make demo                 two guests, sroce0 in each, rdma link + ibv_devinfo, traffic
#   make bench                sroce vs rdma_rxe vs TCP, then congestion control (bench-cc),
#                             build/bench/ (never part of make test)
#   make bench-cc             two RC flows through a bottleneck, DCQCN on and off
#   make deb                  build/deb/sroce-dkms_V_all.deb and libsroce_V_ARCH.deb (debian/)
#   make clean

KVER ?= $(shell scripts/default-kver.sh)
# The kernels make test runs the subset of the VM suites on (SROCE_TEST_SUBSET in
# tests/vm/conftest.py): one per other installed series, unless KVER was chosen.
ifeq ($(origin KVER),file)
KVER_OTHERS ?= $(shell scripts/default-kver.sh --others $(KVER))
else
KVER_OTHERS ?=
endif
KDIR ?= /lib/modules/$(KVER)/build
BUILD := $(CURDIR)/build
CMAKE_BUILD := $(BUILD)/cmake
# Each kernel version gets its own copy of the module sources, so builds for
# several kernels never share objects.
KBUILD_DIR := $(BUILD)/kmod/$(KVER)
MODULE := $(KBUILD_DIR)/kernel/sroce.ko
INSTALL_TREE := $(BUILD)/install/$(KVER)
PYTHON := /usr/bin/python3
PYTEST_ARGS ?=

ifneq ($(CI),)
WERROR := ON
else
WERROR ?= OFF
endif

.PHONY: all module userspace install install-tree test check-style unit-test vm-test \
	vm-test-others demo bench bench-cc deb deps clean

all: module userspace

deps:
	@scripts/install-deps.sh

# Kbuild runs one job per CPU, or shares make's own jobs when make was given -j.
module:
	@test -n "$(KVER)" || { echo "no kernel headers found: run scripts/install-deps.sh" >&2; exit 1; }
	@mkdir -p $(KBUILD_DIR)/kernel $(KBUILD_DIR)/include
	@cp -a kernel/*.[ch] kernel/Kbuild $(KBUILD_DIR)/kernel/
	@cp -a include/. $(KBUILD_DIR)/include/
	$(MAKE) $(if $(filter -j%,$(MAKEFLAGS)),,-j$$(nproc)) -C $(KDIR) M=$(KBUILD_DIR)/kernel $(if $(filter ON,$(WERROR)),KCFLAGS=-Werror) modules

userspace:
	cmake -S . -B $(CMAKE_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DCMAKE_INSTALL_PREFIX=/usr -DSROCE_WERROR=$(WERROR) >/dev/null
	cmake --build $(CMAKE_BUILD) -j$$(nproc)

install: all
	install -D -m 0644 $(MODULE) $(DESTDIR)/lib/modules/$(KVER)/extra/sroce.ko
	DESTDIR=$(DESTDIR) cmake --install $(CMAKE_BUILD) >/dev/null

# The tree the VM rig copies into every guest's root.
install-tree: all
	rm -rf $(INSTALL_TREE)
	$(MAKE) --no-print-directory install DESTDIR=$(INSTALL_TREE)

check-style:
	scripts/check-kernel-style.sh

unit-test: userspace
	ctest --test-dir $(CMAKE_BUILD) --output-on-failure

vm-test: install-tree
	KVER=$(KVER) $(PYTHON) -m pytest -v -rfEs --durations=25 \
		--junitxml=$(BUILD)/vm/junit-$(KVER).xml $(PYTEST_ARGS) tests/build tests/vm

# The subset on the other kernels: each gets its own module build and install tree.
vm-test-others:
	@set -e; for k in $(KVER_OTHERS); do \
		echo "== VM test subset on $$k"; \
		$(MAKE) --no-print-directory install-tree KVER=$$k; \
		KVER=$$k SROCE_TEST_SUBSET=1 $(PYTHON) -m pytest -v -rfEs --durations=10 \
			--junitxml=$(BUILD)/vm/junit-$$k.xml $(PYTEST_ARGS) tests/vm; \
	done

test: deps
	$(MAKE) --no-print-directory check-style
	$(MAKE) --no-print-directory unit-test
	$(MAKE) --no-print-directory vm-test
	$(MAKE) --no-print-directory vm-test-others

demo: deps
	$(MAKE) --no-print-directory install-tree
	KVER=$(KVER) $(PYTHON) vm/rig.py --guests 2 --script vm/demo.sh

# sroce against rdma_rxe and TCP (perftest, iperf3, sockperf, NVMe-oF) at netdev MTU
# 1500 and 9000, guests without slub_debug, medians of 5: build/bench/bench.{json,png}
# (BENCH_ARGS=--quick ...; vm/bench.py --help; Documentation/performance.rst).
# Then the congestion-control run (bench-cc). Both run even when the first one
# reports a failure; make fails if either did.
bench: deps
	$(MAKE) --no-print-directory install-tree
	rc=0; KVER=$(KVER) $(PYTHON) vm/bench.py $(BENCH_ARGS) || rc=1; \
	KVER=$(KVER) $(PYTHON) vm/bench_cc.py $(BENCH_CC_ARGS) || rc=1; exit $$rc

# Two ib_write_bw flows into a 30 Mbit/s bottleneck that marks CE, staggered,
# with DCQCN on and off: build/bench/congestion.{json,png}
# (BENCH_CC_ARGS=--seconds 90 ...; vm/bench_cc.py --help; Documentation/congestion.rst).
bench-cc: deps
	$(MAKE) --no-print-directory install-tree
	KVER=$(KVER) $(PYTHON) vm/bench_cc.py $(BENCH_CC_ARGS)

# The Debian packages, built in a copy of the tree (build/deb/src/sroce) so that
# dpkg-buildpackage writes nothing into the source tree or its parent. The
# version comes from debian/changelog. Results: build/deb/*.deb (+ .buildinfo,
# .changes).
DEB_DIR := $(BUILD)/deb
deb:
	rm -rf $(DEB_DIR)/src
	mkdir -p $(DEB_DIR)/src/sroce
	rm -f $(DEB_DIR)/*.deb $(DEB_DIR)/*.buildinfo $(DEB_DIR)/*.changes
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
		git ls-files -z --cached --others --exclude-standard | \
			xargs -0 sh -c 'for f; do [ -e "$$f" ] && printf "%s\0" "$$f"; done' sh | \
			tar --null -T - -cf - | tar -C $(DEB_DIR)/src/sroce -xf -; \
	else \
		tar --exclude=./build --exclude=.git -cf - . | tar -C $(DEB_DIR)/src/sroce -xf -; \
	fi
	cd $(DEB_DIR)/src/sroce && dpkg-buildpackage -us -uc -b -j$$(nproc) >../build.log 2>&1 || \
		{ tail -n 40 ../build.log; exit 1; }
	mv $(DEB_DIR)/src/*.deb $(DEB_DIR)/src/*.buildinfo $(DEB_DIR)/src/*.changes $(DEB_DIR)/
	rm -rf $(DEB_DIR)/src/sroce
	@ls -1 $(DEB_DIR)/*.deb

clean:
	rm -rf $(BUILD)
	$(MAKE) -C kernel clean 2>/dev/null || true
