# SPDX-License-Identifier: BSD-2-Clause
# Tests of the provider: ABI layout, exported symbols, WQE and CQE unit tests.

# Every row of libibverbs' measured provider-interface layout, checked
# against src/driver.h by a program generated from the table.  configure
# picks the tables of the libibverbs it found (PABI_LAYOUT_TABLES).
check_PROGRAMS += tests/abi/layout-check
nodist_tests_abi_layout_check_SOURCES = tests/abi/layout-check.c
TESTS += tests/abi/layout-check
CLEANFILES += tests/abi/layout-check.c
EXTRA_DIST += tests/abi/pabi34-layout.tsv tests/abi/pabi34-rdma45-layout.tsv \
	tests/abi/pabi65-layout.tsv tests/abi/gen-layout-check.sh

ABI_LAYOUT_TABLES = $(PABI_LAYOUT_TABLES:%=$(srcdir)/tests/abi/%)
tests/abi/layout-check.c: $(ABI_LAYOUT_TABLES) \
		$(srcdir)/tests/abi/gen-layout-check.sh Makefile
	$(MKDIR_P) tests/abi
	$(SHELL) $(srcdir)/tests/abi/gen-layout-check.sh \
		$(ABI_LAYOUT_TABLES) > $@.tmp && mv $@.tmp $@

# The library exports the MLX4_1.0 direct verbs and nothing else.
TESTS += tests/provider-symbols.tap
EXTRA_DIST += tests/provider-symbols.tap

# Unit tests link the provider's sources with a device-less context.  Like
# every test here they speak TAP: so do the programs that make check runs
# without a script (the unit tests, layout-check).
LOG_DRIVER = $(TAP_LOG_DRIVER)
MLX4_UNIT_SOURCES = $(MLX4_PROVIDER_SOURCES) \
	tests/provider-fake.c tests/provider-fake.h tests/tap.h
MLX4_UNIT_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests
MLX4_UNIT_LIBS = -libverbs -lpthread

check_PROGRAMS += tests/unit-post tests/unit-poll
TESTS += tests/unit-post tests/unit-poll tests/provider-memcheck.tap
EXTRA_DIST += tests/provider-memcheck.tap

tests_unit_post_SOURCES = tests/unit-post.c $(MLX4_UNIT_SOURCES)
tests_unit_post_CPPFLAGS = $(MLX4_UNIT_CPPFLAGS)
tests_unit_post_LDADD = $(MLX4_UNIT_LIBS)

tests_unit_poll_SOURCES = tests/unit-poll.c $(MLX4_UNIT_SOURCES)
tests_unit_poll_CPPFLAGS = $(MLX4_UNIT_CPPFLAGS)
tests_unit_poll_LDADD = $(MLX4_UNIT_LIBS)


# The verbs pingpong programs and perftest leave out (CQ resize with
# completions outstanding, extended polling, RESET, SRQs, refused
# requests, the HCA clock), on the simulator with both providers.
check_PROGRAMS += tests/provider-verbs tests/provider-dv
tests_provider_verbs_SOURCES = tests/provider-verbs.c tests/tap.h tests/device.h \
	tests/qp-connect.h
tests_provider_verbs_LDADD = -libverbs
# The direct verbs: this tree's library only.
tests_provider_dv_SOURCES = tests/provider-dv.c tests/tap.h tests/device.h
tests_provider_dv_LDADD = src/libmlx4.la -libverbs
TESTS += tests/provider-verbs-project.tap tests/provider-verbs-system.tap \
	tests/provider-dv.tap
EXTRA_DIST += tests/provider-verbs-project.tap tests/provider-verbs-system.tap \
	tests/provider-verbs.sh tests/provider-dv.tap

# Benchmark: instructions per data-path call, ours and the distribution's,
# on the simulator under callgrind ("make bench", or bench/run.sh).
noinst_PROGRAMS += bench/mlx4-bench
bench_mlx4_bench_SOURCES = bench/mlx4-bench.c
bench_mlx4_bench_LDADD = -libverbs
EXTRA_DIST += bench/run.sh

bench: all
	$(SHELL) $(srcdir)/bench/run.sh

.PHONY: bench

# The provider for arm64, armhf, ppc64el, riscv64, s390x and i386, with Debian's
# cross compilers: warning-free, unit tests under qemu-user, and the
# barrier before each doorbell checked in the disassembly.  A CPU whose
# tools are missing is skipped, naming the package.
TESTS += tests/cross.tap
EXTRA_DIST += tests/cross.tap tests/cross/check-barriers.pl \
	tests/cross/probe.c tests/cross/s390-kernel.c \
	tests/cross/verbs-init-cq.c
