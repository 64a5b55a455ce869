/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the scheduling choices of mlx4simd's loop cost on this machine
 * (the figures in sim/README's Timing came from it):
 *
 *   nap     a timer sleep of 1 us asked (epoll_pwait2), on a core shared
 *           with a polling program
 *   nap cpu the CPU time (getrusage) a nap of 20 us, 100 us, 1 ms and
 *           10 ms costs on a quiet machine: what an idle daemon pays
 *   move    the process moving itself to the other core
 *           (sched_setaffinity), a polling program on each core
 *   handoff a thread on the other core woken by futex, the waker then
 *           blocking, a polling program on each core
 *   stat    a pread of /proc/PID/stat (where a process last ran)
 *
 * Each of the last four prints the median, 10th and 90th percentile of
 * 2000 tries.  Run it on a quiet machine of two cores or more (it uses
 * cores 0 and 1):
 *   cc -O2 -pthread -o /tmp/sched-costs bench/sched-costs.c
 *   /tmp/sched-costs
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define TRIES	2000
#define WORK_NS	20000		/* busy between tries, as a pass would be */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void busy(uint64_t ns)
{
	uint64_t start = now_ns();

	while (now_ns() - start < ns)
		;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* A polling program on @cpu, which dies with us. */
static pid_t poller(int cpu)
{
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pin(cpu);
		for (;;)
			;
	}
	return pid;
}

static int compare(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *what, uint64_t *t, int n)
{
	qsort(t, n, sizeof(*t), compare);
	printf("%-8s median %6.1f us  p10 %6.1f  p90 %6.1f\n", what,
	       t[n / 2] / 1e3, t[n / 10] / 1e3, t[n * 9 / 10] / 1e3);
}

static uint64_t t[2 * TRIES];

static void nap(void)
{
	struct timespec ts = { 0, 1000 };
	struct epoll_event ev;
	int ep = epoll_create1(0);

	pin(0);
	for (int i = 0; i < TRIES; i++) {
		uint64_t start = now_ns();

		epoll_pwait2(ep, &ev, 1, &ts, NULL);
		t[i] = now_ns() - start;
		busy(WORK_NS);
	}
	close(ep);
	report("nap", t, TRIES);
}

static uint64_t cpu_ns(void)
{
	struct rusage r;

	getrusage(RUSAGE_SELF, &r);
	return (r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1000000000ULL +
	       (r.ru_utime.tv_usec + r.ru_stime.tv_usec) * 1000ULL;
}

/* Before the pollers start: the daemon idle, its core otherwise quiet. */
static void nap_cpu(void)
{
	static const long lengths[] = { 20000, 100000, 1000000, 10000000 };
	struct epoll_event ev;
	int ep = epoll_create1(0);

	for (unsigned int l = 0; l < sizeof(lengths) / sizeof(lengths[0]); l++) {
		struct timespec ts = { 0, lengths[l] };
		int n = lengths[l] > 500000 ? 500000000 / lengths[l] : TRIES;
		uint64_t start = cpu_ns();

		for (int i = 0; i < n; i++)
			epoll_pwait2(ep, &ev, 1, &ts, NULL);
		printf("nap cpu %6.0f us asked: %5.1f us of CPU a nap (%d naps)\n",
		       lengths[l] / 1e3, (cpu_ns() - start) / 1e3 / n, n);
	}
	close(ep);
}

static void move(void)
{
	for (int i = 0; i < TRIES; i++) {
		uint64_t start = now_ns();

		pin(i & 1);
		t[i] = now_ns() - start;
		busy(WORK_NS);
	}
	report("move", t, TRIES);
}

static _Atomic int turn;
static uint64_t woken_at;
static int nt;

static void *handoff_thread(void *arg)
{
	int me = (intptr_t)arg;

	pin(me);
	for (int i = 0; i < TRIES; i++) {
		while (atomic_load(&turn) != me)
			syscall(SYS_futex, &turn, FUTEX_WAIT_PRIVATE, !me,
				NULL, NULL, 0);
		if (i || me)
			t[nt++] = now_ns() - woken_at;
		busy(WORK_NS);
		woken_at = now_ns();
		atomic_store(&turn, !me);
		syscall(SYS_futex, &turn, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
	return NULL;
}

static void handoff(void)
{
	pthread_t a, b;

	pthread_create(&a, NULL, handoff_thread, (void *)0);
	pthread_create(&b, NULL, handoff_thread, (void *)1);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	report("handoff", t, nt);
}

static void stat_read(pid_t pid)
{
	char path[64], buf[1024];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY);
	for (int i = 0; i < TRIES; i++) {
		uint64_t start = now_ns();

		if (pread(fd, buf, sizeof(buf), 0) < 0)
			perror(path);
		t[i] = now_ns() - start;
	}
	close(fd);
	report("stat", t, TRIES);
}

int main(void)
{
	pid_t p0, p1;

	/* As the daemon: ahead of the programs if allowed. */
	setpriority(PRIO_PROCESS, 0, -5);
	prctl(PR_SET_TIMERSLACK, 1000UL);
	nap_cpu();
	p0 = poller(0);
	p1 = poller(1);
	usleep(100000);
	nap();
	move();
	handoff();
	stat_read(p0);
	kill(p0, SIGKILL);
	kill(p1, SIGKILL);
	return 0;
}
