# SPDX-License-Identifier: BSD-2-Clause
# Benchmark: instructions per data-path call, ours and the distribution's,
# on the simulator under callgrind ("make bench", or bench/run.sh).
noinst_PROGRAMS += bench/mlx4-bench
bench_mlx4_bench_SOURCES = bench/mlx4-bench.c
bench_mlx4_bench_LDADD = -libverbs
noinst_PROGRAMS += bench/scale-qps
bench_scale_qps_SOURCES = bench/scale-qps.c
bench_scale_qps_LDADD = -libverbs
EXTRA_DIST += bench/README bench/run.sh bench/perftest.sh bench/sched-costs.c \
	bench/scale.sh bench/sim-cost.sh

bench: all
	$(SHELL) $(srcdir)/bench/run.sh

.PHONY: bench
