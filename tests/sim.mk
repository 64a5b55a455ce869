# Tests that run programs on mlx4sim: the simulator with the distribution's
# provider (it must run Debian's mlx4 unmodified), our provider on it, and
# the two together.  They speak TAP; see tests/lib.sh.

# tests/README says which test covers what.
EXTRA_DIST += tests/README

TEST_EXTENSIONS = .tap
TAP_LOG_DRIVER = env AM_TAP_AWK='$(AWK)' $(SHELL) \
	$(top_srcdir)/build-aux/tap-driver.sh
AM_TESTS_ENVIRONMENT = \
	top_builddir='$(abs_top_builddir)'; top_srcdir='$(abs_top_srcdir)'; \
	export top_builddir top_srcdir;

check_PROGRAMS += tests/rdma-semantics tests/verbs-control tests/sim-strict \
	tests/sim-hostile tests/wr-api
tests_wr_api_SOURCES = tests/wr-api.c tests/tap.h tests/device.h \
	tests/qp-connect.h
tests_wr_api_LDADD = -libverbs
tests_rdma_semantics_SOURCES = tests/rdma-semantics.c tests/tap.h tests/device.h \
	tests/qp-connect.h
tests_rdma_semantics_LDADD = -libverbs
tests_verbs_control_SOURCES = tests/verbs-control.c tests/tap.h tests/device.h
tests_verbs_control_LDADD = -libverbs
# sim-strict reaches under the distribution's provider through its mlx4dv.
tests_sim_strict_SOURCES = tests/sim-strict.c tests/qp-connect.h
tests_sim_strict_LDADD = -libverbs -lmlx4

SIM_TESTS = \
	tests/devinfo-system.tap \
	tests/pingpong-system.tap \
	tests/pingpong-cqe32-system.tap \
	tests/perftest-system.tap \
	tests/rdma-semantics-system.tap \
	tests/wr-api-system.tap \
	tests/verbs-control-system.tap \
	tests/sim-strict.tap \
	tests/sim-hostile.tap \
	tests/lifecycle.tap \
	tests/dv-library.tap \
	tests/cleanup.tap \
	tests/devinfo-project.tap \
	tests/pingpong-project.tap \
	tests/pingpong-cqe32-project.tap \
	tests/perftest-project.tap \
	tests/rdma-semantics-project.tap \
	tests/wr-api-project.tap \
	tests/verbs-control-project.tap \
	tests/interop.tap \
	tests/fabric.tap \
	tests/roce-project.tap \
	tests/roce-system.tap
TESTS += $(SIM_TESTS)

EXTRA_DIST += $(SIM_TESTS) tests/lib.sh tests/devinfo.sh tests/pingpong.sh \
	tests/perftest.sh tests/rdma-semantics.sh tests/verbs-control.sh tests/wr-api.sh \
	tests/roce.sh

# Thread and parent domains, single-threaded CQs: ours has them, the
# distribution's refuses the domains.
check_PROGRAMS += tests/domains
tests_domains_SOURCES = tests/domains.c tests/tap.h tests/device.h
tests_domains_LDADD = -libverbs -lmlx4
TESTS += tests/domains-project.tap tests/domains-system.tap
EXTRA_DIST += tests/domains-project.tap tests/domains-system.tap \
	tests/domains.sh

# What mlx4_ib refuses and how it lays out the queues it hands the
# device, with both providers.
check_PROGRAMS += tests/raw-eth
tests_raw_eth_SOURCES = tests/raw-eth.c tests/tap.h tests/device.h
tests_raw_eth_LDADD = -libverbs -lmlx4
TESTS += tests/raw-eth-project.tap tests/raw-eth-system.tap
EXTRA_DIST += tests/raw-eth-project.tap tests/raw-eth-system.tap \
	tests/raw-eth.sh

check_PROGRAMS += tests/kernel-rules
tests_kernel_rules_SOURCES = tests/kernel-rules.c tests/tap.h tests/device.h
tests_kernel_rules_LDADD = -libverbs -ldl
TESTS += tests/kernel-rules-system.tap tests/kernel-rules-project.tap \
	tests/kernel-rules-eth-system.tap tests/kernel-rules-eth-project.tap
EXTRA_DIST += tests/kernel-rules-system.tap tests/kernel-rules-project.tap \
	tests/kernel-rules-eth-system.tap tests/kernel-rules-eth-project.tap \
	tests/kernel-rules.sh

# The differential test: our provider's traces against the distribution's.
check_PROGRAMS += tests/difftrace-norm
tests_difftrace_norm_SOURCES = tests/difftrace-norm.c
TESTS += tests/difftrace.tap
EXTRA_DIST += tests/difftrace.tap tests/difftrace-accepted.txt

# The file system calls on the device files and sysfs, as a real host answers.
check_PROGRAMS += tests/device-files
tests_device_files_SOURCES = tests/device-files.c tests/tap.h
TESTS += tests/device-files.tap
EXTRA_DIST += tests/device-files.tap

# An ASan-built program finds the device: the preload library is called
# before the C library has set up the environment.  Built by the script
# (skipped where $(CC) cannot build with ASan).
AM_TESTS_ENVIRONMENT += CC='$(CC)'; export CC;
TESTS += tests/device-files-asan.tap
EXTRA_DIST += tests/device-files-asan.tap tests/device-files-asan.c

# The daemon dies under a program blocked on its events: the device is gone.
check_PROGRAMS += tests/device-files-gone
tests_device_files_gone_SOURCES = tests/device-files-gone.c tests/tap.h
tests_device_files_gone_LDADD = -libverbs -lpthread
TESTS += tests/device-files-gone.tap
EXTRA_DIST += tests/device-files-gone.tap

# A program linked with -lmlx4 as an application would be (not through
# libtool), to see which libmlx4.so.1 serves it on the simulator.
check_PROGRAMS += tests/dv-probe
tests_dv_probe_SOURCES = tests/install/dv-probe.c
tests_dv_probe_LDADD = -lmlx4 -libverbs

# Faults on demand (mlx4sim fault): RC retransmission, RNR, duplicates,
# losses of UD and UC, port, QP and device failures, with both providers.
check_PROGRAMS += tests/faults
tests_faults_SOURCES = tests/faults.c tests/tap.h tests/device.h \
	tests/qp-connect.h
tests_faults_LDADD = -libverbs -lpthread
TESTS += tests/faults-system.tap tests/faults-project.tap \
	tests/faults-pingpong.tap
EXTRA_DIST += tests/faults-system.tap tests/faults-project.tap tests/faults.sh \
	tests/faults-pingpong.tap

# The daemon against a fuzzer, with honest clients on the same subnet.
# `make fuzz FUZZ_SECONDS=600` runs it long (MLX4SIM_FUZZ_SEED=N replays).
check_PROGRAMS += tests/sim-fuzz
tests_sim_fuzz_SOURCES = tests/sim-fuzz.c
tests_sim_fuzz_LDADD = -libverbs -lmlx4
FUZZ_SECONDS = 4
AM_TESTS_ENVIRONMENT += FUZZ_SECONDS='$(FUZZ_SECONDS)'; export FUZZ_SECONDS;
TESTS += tests/sim-fuzz.tap
EXTRA_DIST += tests/sim-fuzz.tap

fuzz:
	$(MAKE) $(AM_MAKEFLAGS) check TESTS=tests/sim-fuzz.tap \
		FUZZ_SECONDS='$(FUZZ_SECONDS)'
	@cat tests/fuzz.log
.PHONY: fuzz

# The suite's programs under ASan+UBSan, TSan and (the daemon) MSan, built
# by the script from these lists; skipped where the compilers cannot.
AM_TESTS_ENVIRONMENT += \
	SAN_PROVIDER_SOURCES='$(MLX4_PROVIDER_SOURCES)'; \
	SAN_DAEMON_SOURCES='$(sim_mlx4simd_SOURCES)'; \
	PABI='$(PABI)'; export SAN_PROVIDER_SOURCES SAN_DAEMON_SOURCES PABI;
TESTS += tests/sanitizers.tap
EXTRA_DIST += tests/sanitizers.tap tests/msan-epoll.c
