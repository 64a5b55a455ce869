# SPDX-License-Identifier: BSD-2-Clause
# The provider alone: ABI layout, exported symbols, the WQE and CQE unit
# tests on a device-less context, the same under valgrind and on every
# Debian CPU.

# Every row of libibverbs' measured provider-interface layout, checked
# against src/driver.h by a program generated from the table.  configure
# picks the tables of the libibverbs it found (PABI_LAYOUT_TABLES).
check_PROGRAMS += tests/unit/abi/layout-check
nodist_tests_unit_abi_layout_check_SOURCES = tests/unit/abi/layout-check.c
TESTS += tests/unit/abi/layout-check
CLEANFILES += tests/unit/abi/layout-check.c
EXTRA_DIST += tests/unit/abi/pabi34-layout.tsv \
	tests/unit/abi/pabi34-rdma45-layout.tsv \
	tests/unit/abi/pabi65-layout.tsv tests/unit/abi/gen-layout-check.sh

ABI_LAYOUT_TABLES = $(PABI_LAYOUT_TABLES:%=$(srcdir)/tests/unit/abi/%)
tests/unit/abi/layout-check.c: $(ABI_LAYOUT_TABLES) \
		$(srcdir)/tests/unit/abi/gen-layout-check.sh Makefile
	$(MKDIR_P) tests/unit/abi
	$(SHELL) $(srcdir)/tests/unit/abi/gen-layout-check.sh \
		$(ABI_LAYOUT_TABLES) > $@.tmp && mv $@.tmp $@

# The library exports the MLX4_1.0 direct verbs and nothing else.
TESTS += tests/unit/provider-symbols.tap
EXTRA_DIST += tests/unit/provider-symbols.tap

# Unit tests link the provider's sources with a device-less context
# (provider-fake.c).
MLX4_UNIT_SOURCES = $(MLX4_PROVIDER_SOURCES) \
	tests/unit/provider-fake.c tests/unit/provider-fake.h tests/tap.h \
	tests/cases.h
MLX4_UNIT_LIBS = -libverbs -lpthread
# Flags of their own, so that the provider's sources are compiled apart
# from the library's libtool objects.
MLX4_UNIT_CPPFLAGS = $(AM_CPPFLAGS) -DMLX4_UNIT_BARRIER_HOOK

check_PROGRAMS += tests/unit/unit-post tests/unit/unit-poll
TESTS += tests/unit/unit-post tests/unit/unit-poll \
	tests/unit/provider-memcheck.tap
EXTRA_DIST += tests/unit/provider-memcheck.tap

tests_unit_unit_post_SOURCES = tests/unit/unit-post.c $(MLX4_UNIT_SOURCES)
tests_unit_unit_post_CPPFLAGS = $(MLX4_UNIT_CPPFLAGS)
tests_unit_unit_post_LDADD = $(MLX4_UNIT_LIBS)
tests_unit_unit_poll_SOURCES = tests/unit/unit-poll.c $(MLX4_UNIT_SOURCES)
tests_unit_unit_poll_CPPFLAGS = $(MLX4_UNIT_CPPFLAGS)
tests_unit_unit_poll_LDADD = $(MLX4_UNIT_LIBS)

# The provider for arm64, armhf, ppc64el, riscv64, s390x and i386, with
# Debian's cross compilers: warning-free, unit tests under qemu-user, and
# the barrier before each doorbell checked in the disassembly.  A CPU
# whose tools are missing is skipped, naming the package.
TESTS += tests/unit/cross.tap
EXTRA_DIST += tests/unit/cross.tap tests/unit/cross/check-barriers.pl \
	tests/unit/cross/probe.c tests/unit/cross/s390-kernel.c \
	tests/unit/cross/verbs-init-cq.c
