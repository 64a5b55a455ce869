# SPDX-License-Identifier: BSD-2-Clause
# libibverbs programs on mlx4sim: each NAME-system.tap runs one with the
# distribution's mlx4 provider (the simulator must run it unmodified, with
# no strict-mode breach), NAME-project.tap with ours, both through
# NAME.sh, or tests/on-sim.sh for a program of the suite alone; the rest
# run the two together.  See tests/lib.sh.

# The examples and perftest.
TESTS += tests/verbs/devinfo-system.tap tests/verbs/devinfo-project.tap \
	tests/verbs/pingpong-system.tap tests/verbs/pingpong-project.tap \
	tests/verbs/pingpong-cqe32-system.tap \
	tests/verbs/pingpong-cqe32-project.tap \
	tests/verbs/perftest-system.tap tests/verbs/perftest-project.tap
EXTRA_DIST += tests/verbs/devinfo-system.tap tests/verbs/devinfo-project.tap \
	tests/verbs/pingpong-system.tap tests/verbs/pingpong-project.tap \
	tests/verbs/pingpong-cqe32-system.tap \
	tests/verbs/pingpong-cqe32-project.tap \
	tests/verbs/perftest-system.tap tests/verbs/perftest-project.tap \
	tests/verbs/devinfo.sh tests/verbs/pingpong.sh tests/verbs/perftest.sh

# infiniband-diags over the umad files: ibstat, smpquery, perfquery with a
# pingpong's counters, ibnetdiscover, iblinkinfo, ibping, a port down.
TESTS += tests/verbs/umad-system.tap tests/verbs/umad-project.tap
EXTRA_DIST += tests/verbs/umad-system.tap tests/verbs/umad-project.tap \
	tests/verbs/umad.sh

# OpenSM as the subnet manager (--sm opensm): the LIDs it gives, the
# forwarding table it writes, pingpong and perftest on them, a trap.
TESTS += tests/verbs/opensm-system.tap tests/verbs/opensm-project.tap
EXTRA_DIST += tests/verbs/opensm-system.tap tests/verbs/opensm-project.tap \
	tests/verbs/opensm.sh

# Every opcode on every transport, data and completions checked at both
# ends.
check_PROGRAMS += tests/verbs/rdma-semantics
tests_verbs_rdma_semantics_SOURCES = tests/verbs/rdma-semantics.c \
	tests/tap.h tests/device.h tests/qp-connect.h tests/buffer.h
tests_verbs_rdma_semantics_LDADD = -libverbs
TESTS += tests/verbs/rdma-semantics-system.tap \
	tests/verbs/rdma-semantics-project.tap
EXTRA_DIST += tests/verbs/rdma-semantics-system.tap \
	tests/verbs/rdma-semantics-project.tap

# Refused verbs and work requests, and their errnos.
check_PROGRAMS += tests/verbs/verbs-control
tests_verbs_verbs_control_SOURCES = tests/verbs/verbs-control.c \
	tests/tap.h tests/cases.h tests/device.h
tests_verbs_verbs_control_LDADD = -libverbs
TESTS += tests/verbs/verbs-control-system.tap \
	tests/verbs/verbs-control-project.tap
EXTRA_DIST += tests/verbs/verbs-control-system.tap \
	tests/verbs/verbs-control-project.tap

# What the pingpongs and perftest leave out (CQ resize with completions
# outstanding, extended polling, RESET, the HCA clock).
check_PROGRAMS += tests/verbs/provider-verbs
tests_verbs_provider_verbs_SOURCES = tests/verbs/provider-verbs.c \
	tests/tap.h tests/device.h tests/qp-connect.h
tests_verbs_provider_verbs_LDADD = -libverbs
TESTS += tests/verbs/provider-verbs-system.tap \
	tests/verbs/provider-verbs-project.tap \
	tests/verbs/provider-verbs-eth-system.tap \
	tests/verbs/provider-verbs-eth-project.tap
EXTRA_DIST += tests/verbs/provider-verbs-system.tap \
	tests/verbs/provider-verbs-project.tap tests/verbs/provider-verbs.sh \
	tests/verbs/sim-options.sh \
	tests/verbs/provider-verbs-eth-system.tap \
	tests/verbs/provider-verbs-eth-project.tap

# The direct verbs: this tree's library only.
check_PROGRAMS += tests/verbs/provider-dv
tests_verbs_provider_dv_SOURCES = tests/verbs/provider-dv.c \
	tests/tap.h tests/cases.h tests/device.h
tests_verbs_provider_dv_LDADD = src/libmlx4.la -libverbs
TESTS += tests/verbs/provider-dv.tap
EXTRA_DIST += tests/verbs/provider-dv.tap

# A program linked with -lmlx4 as an application would be (not through
# libtool), to see which libmlx4.so.1 serves it on the simulator.
check_PROGRAMS += tests/verbs/dv-probe
tests_verbs_dv_probe_SOURCES = tests/install/dv-probe.c
tests_verbs_dv_probe_LDADD = -lmlx4 -libverbs
TESTS += tests/verbs/dv-library.tap
EXTRA_DIST += tests/verbs/dv-library.tap

# The ibv_wr_* interface (the distribution's provider has none).
check_PROGRAMS += tests/verbs/wr-api
tests_verbs_wr_api_SOURCES = tests/verbs/wr-api.c \
	tests/tap.h tests/device.h tests/qp-connect.h tests/buffer.h
tests_verbs_wr_api_LDADD = -libverbs
TESTS += tests/verbs/wr-api-system.tap tests/verbs/wr-api-project.tap
EXTRA_DIST += tests/verbs/wr-api-system.tap tests/verbs/wr-api-project.tap

# Thread and parent domains, single-threaded CQs: ours has them, the
# distribution's refuses the domains.
check_PROGRAMS += tests/verbs/domains
tests_verbs_domains_SOURCES = tests/verbs/domains.c \
	tests/tap.h tests/device.h tests/qp-connect.h
tests_verbs_domains_LDADD = -libverbs -lmlx4
TESTS += tests/verbs/domains-project.tap tests/verbs/domains-system.tap
EXTRA_DIST += tests/verbs/domains-project.tap tests/verbs/domains-system.tap

# Raw packet QPs, flow steering, RSS, checksum offload and LSO on
# Ethernet ports.
check_PROGRAMS += tests/verbs/raw-eth
tests_verbs_raw_eth_SOURCES = tests/verbs/raw-eth.c tests/tap.h tests/cases.h \
	tests/device.h
tests_verbs_raw_eth_LDADD = -libverbs -lmlx4
TESTS += tests/verbs/raw-eth-project.tap tests/verbs/raw-eth-system.tap
EXTRA_DIST += tests/verbs/raw-eth-project.tap tests/verbs/raw-eth-system.tap \
	tests/verbs/raw-eth.sh

# What mlx4_ib refuses and how it lays out the queues it hands the
# device, with both providers, on InfiniBand and on Ethernet ports.
check_PROGRAMS += tests/verbs/kernel-rules
tests_verbs_kernel_rules_SOURCES = tests/verbs/kernel-rules.c \
	tests/tap.h tests/cases.h tests/device.h
tests_verbs_kernel_rules_LDADD = -libverbs -ldl
TESTS += tests/verbs/kernel-rules-system.tap \
	tests/verbs/kernel-rules-project.tap \
	tests/verbs/kernel-rules-eth-system.tap \
	tests/verbs/kernel-rules-eth-project.tap
EXTRA_DIST += tests/verbs/kernel-rules-system.tap \
	tests/verbs/kernel-rules-project.tap \
	tests/verbs/kernel-rules-eth-system.tap \
	tests/verbs/kernel-rules-eth-project.tap tests/verbs/kernel-rules.sh

# The audit table of every kernel check (issue 23): each test it names
# exists, every served command has rows, the closing counts are right.
TESTS += tests/verbs/kernel-rules-table.tap
EXTRA_DIST += tests/verbs/kernel-rules-table.tap tests/verbs/kernel-rules.txt

# RoCE v1 and v2: the examples and perftest by GID on Ethernet ports.
TESTS += tests/verbs/roce-project.tap tests/verbs/roce-system.tap
# The wire (--uplink): two runs in two network namespaces (root).
TESTS += tests/verbs/wire-project.tap tests/verbs/wire-system.tap
EXTRA_DIST += tests/verbs/wire-project.tap tests/verbs/wire-system.tap \
	tests/verbs/wire.sh
check_PROGRAMS += tests/verbs/icrc-check tests/verbs/wire-peer
tests_verbs_icrc_check_SOURCES = tests/verbs/icrc-check.c
tests_verbs_wire_peer_SOURCES = tests/verbs/wire-peer.c
tests_verbs_wire_peer_LDADD = -libverbs
EXTRA_DIST += tests/verbs/roce-project.tap tests/verbs/roce-system.tap \
	tests/verbs/roce.sh

# The two providers together, on one subnet.
TESTS += tests/verbs/interop.tap
EXTRA_DIST += tests/verbs/interop.tap

# The differential test: our provider's traces against the distribution's.
check_PROGRAMS += tests/verbs/difftrace-norm
tests_verbs_difftrace_norm_SOURCES = tests/verbs/difftrace-norm.c
TESTS += tests/verbs/difftrace.tap
EXTRA_DIST += tests/verbs/difftrace.tap tests/verbs/difftrace-accepted.txt

# Faults on demand (mlx4sim fault): RC retransmission, RNR, duplicates,
# losses of UD and UC, port, QP and device failures, with both providers.
check_PROGRAMS += tests/verbs/faults
tests_verbs_faults_SOURCES = tests/verbs/faults.c tests/tap.h tests/cases.h \
	tests/device.h tests/qp-connect.h tests/buffer.h
tests_verbs_faults_LDADD = -libverbs -lpthread
TESTS += tests/verbs/faults-system.tap tests/verbs/faults-project.tap \
	tests/verbs/faults-pingpong.tap
EXTRA_DIST += tests/verbs/faults-system.tap tests/verbs/faults-project.tap \
	tests/verbs/faults-pingpong.tap

# UCX: ucx_info and ucx_perftest over rc_verbs and ud_verbs, on
# InfiniBand ports and over RoCE (ucx-utils).
TESTS += tests/verbs/ucx-system.tap tests/verbs/ucx-project.tap
EXTRA_DIST += tests/verbs/ucx-system.tap tests/verbs/ucx-project.tap \
	tests/verbs/ucx.sh

# DPDK: dpdk-testpmd with the mlx4 PMD (librte-net-mlx4-23, dpdk-dev) on
# two Ethernet ports, without hugepages; toeplitz computes the RSS hashes
# the test expects, tcp-source sends the TCP segments testpmd forwards
# with TCP checksum offload and TSO.
check_PROGRAMS += tests/verbs/toeplitz tests/verbs/tcp-source
tests_verbs_toeplitz_SOURCES = tests/verbs/toeplitz.c
tests_verbs_tcp_source_SOURCES = tests/verbs/tcp-source.c tests/device.h
tests_verbs_tcp_source_LDADD = -libverbs
TESTS += tests/verbs/dpdk-system.tap tests/verbs/dpdk-project.tap
EXTRA_DIST += tests/verbs/dpdk-system.tap tests/verbs/dpdk-project.tap \
	tests/verbs/dpdk.sh

# MPI: a program of ours that checks every byte, run by Open MPI (pml ucx
# and the openib BTL) and MPICH (ch4:ucx), 2 and 4 ranks.
TESTS += tests/verbs/mpi-system.tap tests/verbs/mpi-project.tap
EXTRA_DIST += tests/verbs/mpi-system.tap tests/verbs/mpi-project.tap \
	tests/verbs/mpi.sh tests/verbs/mpi-check.c

# librdmacm's programs (rdmacm-utils) over /dev/infiniband/rdma_cm, on
# RoCE and InfiniBand; the file at its ABI, hostile (rdmacm-abi); the
# connection manager's events in order (rdmacm-events).
check_PROGRAMS += tests/verbs/rdmacm-abi tests/verbs/rdmacm-events
tests_verbs_rdmacm_abi_SOURCES = tests/verbs/rdmacm-abi.c tests/tap.h
tests_verbs_rdmacm_events_SOURCES = tests/verbs/rdmacm-events.c tests/tap.h
tests_verbs_rdmacm_events_LDADD = -lpthread
TESTS += tests/verbs/rdmacm-project.tap tests/verbs/rdmacm-system.tap
EXTRA_DIST += tests/verbs/rdmacm-project.tap tests/verbs/rdmacm-system.tap \
	tests/verbs/rdmacm.sh

# RLIMIT_MEMLOCK: what the kernel pins for a process, held to its limit.
check_PROGRAMS += tests/verbs/memlock
tests_verbs_memlock_SOURCES = tests/verbs/memlock.c tests/tap.h \
	tests/cases.h tests/device.h
tests_verbs_memlock_LDADD = -libverbs -lmlx4
TESTS += tests/verbs/memlock-project.tap tests/verbs/memlock-system.tap
EXTRA_DIST += tests/verbs/memlock-project.tap tests/verbs/memlock-system.tap

# Many hosts (mlx4sim --hosts): four hosts, an adapter each; mlx4sim-rsh
# as ssh; ibv_rc_pingpong, rping, ucmatose between hosts; Open MPI and
# MPICH ranks one a host, started through mlx4sim-rsh; two RoCE hosts.
TESTS += tests/verbs/hosts-project.tap tests/verbs/hosts-system.tap
EXTRA_DIST += tests/verbs/hosts-project.tap tests/verbs/hosts-system.tap \
	tests/verbs/hosts.sh
