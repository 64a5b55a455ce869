# SPDX-License-Identifier: BSD-2-Clause
# The simulator itself: the device's rules in strict mode, hostile and
# fuzzing clients, the device files and sysfs, the daemon's life and a
# subnet of several adapters; the suite's programs under sanitizers.

# Strict mode: each breach of the hardware protocol, made on purpose
# (through the distribution's provider's mlx4dv), is caught and named.
check_PROGRAMS += tests/sim/sim-strict
tests_sim_sim_strict_SOURCES = tests/sim/sim-strict.c tests/qp-connect.h
tests_sim_sim_strict_LDADD = -libverbs -lmlx4
TESTS += tests/sim/sim-strict.tap
EXTRA_DIST += tests/sim/sim-strict.tap

# Clients that lie in their requests and pages harm no other client.
check_PROGRAMS += tests/sim/sim-hostile
tests_sim_sim_hostile_LDADD = -libverbs
TESTS += tests/sim/sim-hostile.tap
EXTRA_DIST += tests/sim/sim-hostile.tap

# The daemon against a fuzzer, with honest clients on the same subnet.
# `make fuzz FUZZ_SECONDS=600` runs it long (MLX4SIM_FUZZ_SEED=N replays).
check_PROGRAMS += tests/sim/sim-fuzz
tests_sim_sim_fuzz_SOURCES = tests/sim/sim-fuzz.c tests/sim/loopback.h
tests_sim_sim_fuzz_LDADD = -libverbs -lmlx4
FUZZ_SECONDS = 4
AM_TESTS_ENVIRONMENT += FUZZ_SECONDS='$(FUZZ_SECONDS)'; export FUZZ_SECONDS;
TESTS += tests/sim/sim-fuzz.tap
EXTRA_DIST += tests/sim/sim-fuzz.tap

fuzz:
	$(MAKE) $(AM_MAKEFLAGS) check TESTS=tests/sim/sim-fuzz.tap \
		FUZZ_SECONDS='$(FUZZ_SECONDS)'
	@cat tests/sim/sim-fuzz.log
.PHONY: fuzz

# The file system calls on the device files and sysfs, as a real host
# answers them.
check_PROGRAMS += tests/sim/device-files
tests_sim_device_files_SOURCES = tests/sim/device-files.c tests/tap.h \
	tests/cases.h
TESTS += tests/sim/device-files.tap
EXTRA_DIST += tests/sim/device-files.tap

# The device's boundary: its pages mapped by a raw mmap system call, sysfs
# by its literal path, the simulator's own descriptors out of the way.
check_PROGRAMS += tests/sim/device-boundary
tests_sim_device_boundary_SOURCES = tests/sim/device-boundary.c tests/tap.h \
	tests/cases.h tests/device.h
tests_sim_device_boundary_LDADD = -libverbs
TESTS += tests/sim/device-boundary-project.tap \
	tests/sim/device-boundary-system.tap
EXTRA_DIST += tests/sim/device-boundary-project.tap \
	tests/sim/device-boundary-system.tap

# Pinned pages: shared with the daemon, as a host pins them (fork, munmap,
# madvise, mremap), and a client's bad descriptors refused.  Fair shares:
# one QP's stream holds another's WQE back by a share, not by the stream.
check_PROGRAMS += tests/sim/pinned-memory tests/sim/fair-share
tests_sim_pinned_memory_SOURCES = tests/sim/pinned-memory.c \
	tests/sim/loopback.h
tests_sim_fair_share_SOURCES = tests/sim/fair-share.c tests/sim/loopback.h
tests_sim_pinned_memory_LDADD = -libverbs
tests_sim_fair_share_LDADD = -libverbs
TESTS += tests/sim/pinned-memory-project.tap \
	tests/sim/pinned-memory-system.tap \
	tests/sim/fair-share-project.tap tests/sim/fair-share-system.tap
EXTRA_DIST += tests/sim/pinned-memory-project.tap \
	tests/sim/pinned-memory-system.tap \
	tests/sim/fair-share-project.tap tests/sim/fair-share-system.tap

# The device writes a message in address order: a thread polling its
# last byte finds the rest there (Open MPI's eager RDMA relies on it).
check_PROGRAMS += tests/sim/write-order
tests_sim_write_order_SOURCES = tests/sim/write-order.c tests/sim/loopback.h
tests_sim_write_order_LDADD = -libverbs -lpthread
TESTS += tests/sim/write-order-project.tap tests/sim/write-order-system.tap
EXTRA_DIST += tests/sim/write-order-project.tap tests/sim/write-order-system.tap

# An ASan-built program finds the device: the preload library is called
# before the C library has set up the environment.  Built by the script
# (skipped where $(CC) cannot build with ASan).
AM_TESTS_ENVIRONMENT += CC='$(CC)'; export CC;
TESTS += tests/sim/device-files-asan.tap
EXTRA_DIST += tests/sim/device-files-asan.tap tests/sim/device-files-asan.c

# The daemon dies under a program blocked on its events: the device is
# gone.
check_PROGRAMS += tests/sim/device-files-gone
tests_sim_device_files_gone_SOURCES = tests/sim/device-files-gone.c tests/tap.h
tests_sim_device_files_gone_LDADD = -libverbs -lpthread
TESTS += tests/sim/device-files-gone.tap
EXTRA_DIST += tests/sim/device-files-gone.tap

# How mlx4sim run and stop report the simulator's end, what a process
# leaves behind when it exits, and a subnet of several adapters.
TESTS += tests/sim/lifecycle.tap tests/sim/cleanup.tap tests/sim/fabric.tap
EXTRA_DIST += tests/sim/lifecycle.tap tests/sim/cleanup.tap tests/sim/fabric.tap

# The suite's programs under ASan+UBSan, TSan and (the daemon) MSan, built
# by the script from these lists; skipped where the compilers cannot.
AM_TESTS_ENVIRONMENT += \
	SAN_PROVIDER_SOURCES='$(MLX4_PROVIDER_SOURCES)'; \
	SAN_DAEMON_SOURCES='$(sim_mlx4simd_SOURCES)'; \
	SAN_PRELOAD_SOURCES='$(sim_libmlx4sim_la_SOURCES)'; \
	PABI='$(PABI)'; \
	export SAN_PROVIDER_SOURCES SAN_DAEMON_SOURCES SAN_PRELOAD_SOURCES PABI;
TESTS += tests/sim/sanitizers.tap
EXTRA_DIST += tests/sim/sanitizers.tap tests/sim/msan-epoll.c

# The umad files: agents, MADs and their answers, timeouts, issm, and a
# client writing noise (tests/verbs/umad.sh runs the diagnostic tools).
check_PROGRAMS += tests/sim/umad-abi
tests_sim_umad_abi_SOURCES = tests/sim/umad-abi.c tests/tap.h
TESTS += tests/sim/umad-abi.tap tests/sim/umad-sm.tap
EXTRA_DIST += tests/sim/umad-abi.tap tests/sim/umad-sm.tap

# sim/host/vma.c's two ways to a process's mappings (PROCMAP_QUERY and the
# maps text) give the same spans, whichever one this machine's kernel uses.
check_PROGRAMS += tests/sim/vma-paths
tests_sim_vma_paths_SOURCES = tests/sim/vma-paths.c tests/tap.h
EXTRA_tests_sim_vma_paths_SOURCES = sim/host/vma.c sim/host/vma.h
TESTS += tests/sim/vma-paths
