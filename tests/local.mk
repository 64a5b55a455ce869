# SPDX-License-Identifier: BSD-2-Clause
# The test suite: tests/unit (the provider alone, with a device-less
# context), tests/verbs (libibverbs programs on mlx4sim, with our provider
# and the distribution's) and tests/sim (the simulator itself: strict mode,
# hostile clients, device files, sanitizers).  tests/README says which
# test covers what.  Every test speaks TAP, the programs make check runs
# without a script too (the unit tests, layout-check).

EXTRA_DIST += tests/README tests/lib.sh tests/probes.sh tests/tap.h tests/device.h \
	tests/qp-connect.h tests/buffer.h tests/wait.h tests/inet.h

# A program of the suite on the simulator with each provider: its
# NAME-project.tap and NAME-system.tap run it through this.
EXTRA_DIST += tests/on-sim.sh

TEST_EXTENSIONS = .tap
LOG_DRIVER = $(TAP_LOG_DRIVER)
TAP_LOG_DRIVER = env AM_TAP_AWK='$(AWK)' $(SHELL) \
	$(top_srcdir)/build-aux/tap-driver.sh
AM_TESTS_ENVIRONMENT = \
	top_builddir='$(abs_top_builddir)'; top_srcdir='$(abs_top_srcdir)'; \
	export top_builddir top_srcdir;

# The programs of tests/verbs and tests/sim include tap.h, device.h,
# qp-connect.h and buffer.h from here.
TESTS_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests

include tests/unit/local.mk
include tests/verbs/local.mk
include tests/sim/local.mk
