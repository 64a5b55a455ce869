/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mlx4simd: the daemon.  It creates the run directory's sysfs tree and
 * socket, then serves processes until SIGTERM.
 *
 * The loop: doorbells are memory, not interrupts, so while processes are
 * active the daemon polls their pages; as activity stops it sleeps longer
 * and longer between looks, and with no process attached it sleeps until
 * a connection arrives.  The idle daemon does not keep a core busy.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../host/protocol.h"
#include "../kernel/kernel.h"

/*
 * How long the daemon looks again at once after work: from SPIN_MIN_NS,
 * doubled each time work came while it looked, halved each time it had
 * to nap before work came, up to SPIN_MAX_NS (see spin_after_work).
 */
#define SPIN_MIN_NS	(5 * 1000ULL)
#define SPIN_MAX_NS	(50 * 1000ULL)
#define NAP_SHORT_NS	(10 * 1000ULL)	/* see first_nap() */
#define NAP_NS		(20 * 1000ULL)
#define MAX_EVENTS	32
/*
 * While it looks again at once, the daemon asks the kernel about its
 * sockets (a system call) at most this often: a pass moves its data with
 * loads and stores (pinned memory), and a command may wait this long.
 */
#define SOCKETS_EVERY_NS	(10 * 1000ULL)

static int listen_fd, signal_fd;
static int uplink_tag;		/* the uplink's descriptors in epoll */
static char socket_path[PATH_MAX];

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mlx4simd --dir DIR [--hcas N] [--hosts N] [--ports N] [--link-layer ib|eth[,ib|eth]]\n"
		"                [--model cx3|cx3pro] [--vlan ID]...\n"
		"                [--cqe-size 32|64] [--no-strict] [--trace FILE] [--pcap FILE]\n"
		"                [--sm builtin|external] [--uplink IFACE] [--host-id N]\n"
		"The mlx4sim daemon; start it with mlx4sim(1), not by hand.\n");
}

/*
 * --link-layer: one link layer for every port ("eth"), or one per port
 * ("ib,eth"), as a ConnectX-3's ports are set one by one.
 */
static int parse_link_layers(const char *text)
{
	char copy[32], *save = NULL, *word;
	int p = 0;

	snprintf(copy, sizeof(copy), "%s", text);
	for (word = strtok_r(copy, ",", &save); word;
	     word = strtok_r(NULL, ",", &save)) {
		if (p == CX3_MAX_PORTS)
			goto bad;
		if (!strcmp(word, "ib"))
			sim.opt.link_layer[p++] = IBV_LINK_LAYER_INFINIBAND;
		else if (!strcmp(word, "eth"))
			sim.opt.link_layer[p++] = IBV_LINK_LAYER_ETHERNET;
		else
			goto bad;
	}
	if (p == 0)
		goto bad;
	for (int rest = p; rest < CX3_MAX_PORTS; rest++)
		sim.opt.link_layer[rest] = sim.opt.link_layer[p - 1];
	return 0;
bad:
	fprintf(stderr, "mlx4simd: --link-layer takes ib or eth, or one of them per port (ib,eth): not '%s'\n",
		text);
	return -1;
}

/* --vlan ID: a VLAN interface of that ID on every Ethernet port. */
static int add_vlan(const char *text)
{
	char *end;
	long id = strtol(text, &end, 10);

	if (*end || id < 1 || id > 4094 || sim.opt.nvlans == SIM_MAX_VLANS) {
		fprintf(stderr, "mlx4simd: --vlan takes a VLAN ID from 1 to 4094, %d at most: not '%s'\n",
			SIM_MAX_VLANS, text);
		return -1;
	}
	sim.opt.vlans[sim.opt.nvlans++] = id;
	return 0;
}

static int parse_options(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "hcas", required_argument, NULL, 'H' },
		{ "hosts", required_argument, NULL, 'N' },
		{ "ports", required_argument, NULL, 'p' },
		{ "link-layer", required_argument, NULL, 'l' },
		{ "vlan", required_argument, NULL, 'v' },
		{ "model", required_argument, NULL, 'm' },
		{ "cqe-size", required_argument, NULL, 'c' },
		{ "no-strict", no_argument, NULL, 'n' },
		{ "trace", required_argument, NULL, 't' },
		{ "pcap", required_argument, NULL, 'P' },
		{ "sm", required_argument, NULL, 's' },
		{ "uplink", required_argument, NULL, 'u' },
		{ "host-id", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *link_layers = "ib", *model = "cx3pro";
	int c;

	sim.opt.nhcas = 1;
	sim.opt.nports = 2;
	sim.opt.cqe_size = 64;
	sim.opt.host_id = -1;		/* chosen (uplink.c) */
	sim.opt.strict = true;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'd': sim.opt.dir = optarg; break;
		case 'H': sim.opt.nhcas = atoi(optarg); break;
		case 'N': sim.opt.nhosts = atoi(optarg); break;
		case 'p': sim.opt.nports = atoi(optarg); break;
		case 'l': link_layers = optarg; break;
		case 'v':
			if (add_vlan(optarg))
				return -1;
			break;
		case 'm': model = optarg; break;
		case 'c': sim.opt.cqe_size = atoi(optarg); break;
		case 'n': sim.opt.strict = false; break;
		case 't': sim.opt.trace = optarg; break;
		case 'P': sim.opt.pcap = optarg; break;
		case 'u': sim.opt.uplink = optarg; break;
		case 'i': sim.opt.host_id = atoi(optarg); break;
		case 's':
			/* external: the ports wait in INIT for an SM's sweep. */
			if (strcmp(optarg, "builtin") && strcmp(optarg, "external")) {
				fprintf(stderr, "mlx4simd: --sm takes builtin or external: not '%s'\n",
					optarg);
				return -1;
			}
			sim.opt.external_sm = !strcmp(optarg, "external");
			break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (!sim.opt.dir || optind != argc) {
		usage(stderr);
		return -1;
	}
	if (sim.opt.host_id < -1 || sim.opt.host_id > UPLINK_MAX_HOST_ID) {
		fprintf(stderr, "mlx4simd: --host-id takes 0 to %d\n",
			UPLINK_MAX_HOST_ID);
		return -1;
	}
	if (sim.opt.nhcas < 1 || sim.opt.nhcas > 16) {
		fprintf(stderr, "mlx4simd: --hcas must be 1 to 16\n");
		return -1;
	}
	/* --hosts N: --hcas adapters on each host, N hosts on one subnet. */
	sim.opt.hcas_per_host = sim.opt.nhcas;
	if (sim.opt.nhosts) {
		if (sim.opt.nhosts < 1 || sim.opt.nhosts > SIM_MAX_HOSTS ||
		    sim.opt.nhosts * sim.opt.nhcas > 16) {
			fprintf(stderr, "mlx4simd: --hosts must be 1 to %d, with at most 16 adapters in all\n",
				SIM_MAX_HOSTS);
			return -1;
		}
		sim.opt.nhcas *= sim.opt.nhosts;
	}
	if (sim.opt.nports < 1 || sim.opt.nports > CX3_MAX_PORTS) {
		fprintf(stderr, "mlx4simd: --ports must be 1 or 2 (a ConnectX-3 has two)\n");
		return -1;
	}
	if (parse_link_layers(link_layers))
		return -1;
	sim.opt.model = sim_model_by_name(model);
	if (!sim.opt.model) {
		fprintf(stderr, "mlx4simd: --model takes cx3 or cx3pro: not '%s'\n",
			model);
		return -1;
	}
	if (sim.opt.cqe_size != 32 && sim.opt.cqe_size != 64) {
		fprintf(stderr, "mlx4simd: --cqe-size must be 32 or 64\n");
		return -1;
	}
	return 0;
}

static int epoll_add(int ep, int fd, void *tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = tag };

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

static int open_socket(const char *dir)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd;

	if ((size_t)snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/%s", dir,
			     MLX4SIM_SOCKET_NAME) >= sizeof(addr.sun_path)) {
		fprintf(stderr, "mlx4simd: run directory path too long: %s\n", dir);
		return -1;
	}
	snprintf(socket_path, sizeof(socket_path), "%s", addr.sun_path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (void *)&addr, sizeof(addr)) || listen(fd, 128)) {
		fprintf(stderr, "mlx4simd: %s: %m\n", addr.sun_path);
		return -1;
	}
	return fd;
}

static void accept_process(int ep)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct sim_ctx *ctx;
	int fd;

	while ((fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) ||
		    !(ctx = ctx_new(fd, cred.pid))) {
			close(fd);
			continue;
		}
		if (epoll_add(ep, fd, ctx)) {
			ctx_close(ctx);
			continue;
		}
		sim.work_done = true;
	}
}

/* The device's free-running clock, in each context's clock page. */
static void tick_clocks(uint64_t now)
{
	uint64_t ticks = htobe64((now - sim.start_ns) * CX3_CORE_CLOCK_KHZ /
				 1000000);
	struct sim_ctx *ctx;

	list_for_each(&sim.ctxs, ctx, struct sim_ctx, link)
		if (ctx->pages)
			*(volatile uint64_t *)(ctx_page(ctx, SIM_PAGE_CLOCK) +
					       SIM_CLOCK_OFFSET) = ticks;
}

static bool devices_open(void)
{
	struct sim_ctx *ctx;

	list_for_each(&sim.ctxs, ctx, struct sim_ctx, link)
		if (ctx->has_ucontext)
			return true;
	return false;
}

/*
 * What the daemon holds, for tests that check processes leave nothing
 * behind (SIGUSR1 writes it to the run directory's "stats").
 */
static void write_stats(void)
{
	unsigned long long qps = 0, cqs = 0, srqs = 0, mrs = 0, pds = 0;
	unsigned long long ctxs = 0, xrcds = 0, mcast = 0;
	char path[PATH_MAX], final[PATH_MAX];
	struct sim_xrcd *xrcd;
	struct sim_mcast *m;
	struct sim_ctx *ctx;
	FILE *f;

	for (int h = 0; h < sim.opt.nhcas; h++) {
		qps += sim.hca[h].nqps;
		cqs += sim.hca[h].ncqs;
		srqs += sim.hca[h].nsrqs;
		mrs += sim.hca[h].nmrs;
		pds += sim.hca[h].npds;
	}
	list_for_each(&sim.ctxs, ctx, struct sim_ctx, link)
		ctxs++;
	list_for_each(&sim.xrcds, xrcd, struct sim_xrcd, link)
		xrcds++;
	list_for_each(&sim.mcast, m, struct sim_mcast, link)
		mcast++;
	snprintf(path, sizeof(path), "%s/stats.tmp", sim.opt.dir);
	f = fopen(path, "we");
	if (!f)
		return;
	fprintf(f, "contexts %llu\npds %llu\nmrs %llu\ncqs %llu\nqps %llu\n"
		"srqs %llu\nxrcds %llu\nmcast %llu\npinned %llu\n"
		"breaches %llu\nactive_qps %llu\n",
		ctxs, pds, mrs, cqs, qps, srqs, xrcds, mcast,
		(unsigned long long)dma_windows(),
		(unsigned long long)sim.breaches,
		(unsigned long long)sim.active_qps);
	fclose(f);
	/* Readers see the old file or the new one, never half of one. */
	snprintf(final, sizeof(final), "%s/stats", sim.opt.dir);
	rename(path, final);
}

/*
 * How much the daemon did: the uverbs commands it took and the CQEs it
 * wrote.  A test's watchdog (SIGUSR2 writes it to "progress") sees a
 * stuck queue as a count that stops moving, long before its timeout.
 */
static void write_progress(void)
{
	char path[PATH_MAX], final[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/progress.tmp", sim.opt.dir);
	f = fopen(path, "we");
	if (!f)
		return;
	fprintf(f, "%llu\n", (unsigned long long)sim.progress);
	fclose(f);
	snprintf(final, sizeof(final), "%s/progress", sim.opt.dir);
	rename(path, final);
}

/*
 * SIGUSR1 asks for stats, SIGUSR2 for progress; SIGTERM and SIGINT end
 * the daemon.
 */
static bool take_signal(void)
{
	struct signalfd_siginfo si;

	if (read(signal_fd, &si, sizeof(si)) != sizeof(si))
		return true;
	if (si.ssi_signo == SIGUSR1) {
		write_stats();
		return true;
	}
	if (si.ssi_signo == SIGUSR2) {
		write_progress();
		return true;
	}
	return false;
}

/*
 * How long to look again at once after work.  Polling pays when the
 * process that answers runs on another core: its answer comes a few
 * microseconds after its completion.  It costs when that process shares
 * the daemon's core, which it gets only while the daemon naps: with two
 * clients polling their CQs and the daemon on two cores, one client
 * always does.  So the spin grows while work keeps coming during it (a
 * stream of WQEs, an answer from another core) and shrinks while work
 * comes only after a nap.  Measured on a 2-core VM under load (median
 * of 3, ib_send_lat -n 3000 / ib_send_bw -n 30000): a fixed 50 us spin
 * gave 88.7 us and 40.9 kmsg/s, a fixed 5 us spin 45.3 us and 104,
 * this 34.7 us and 73.8.
 */
static uint64_t spin_after_work(uint64_t spin, bool napped)
{
	return napped ? MAX(spin / 2, SPIN_MIN_NS) : MIN(spin * 2, SPIN_MAX_NS);
}

/*
 * The first nap after a little work is short.  Two WQEs between naps are
 * a ping-pong's round trip (fewer, a command or a one-way message): the
 * answer of the program on the other core came during the spin, and the
 * program that shares the daemon's core can answer only while the daemon
 * naps, and needs a few microseconds for it.  A nap of 10 us lets it
 * answer sooner than one of 20 (at nice -20; sim/README, Timing, has the
 * figures).  More WQEs are a stream, where short naps take the core back
 * from a program still posting and make passes smaller.  Later naps are
 * never short: a program that did not answer in the first (other work
 * holds its core) is not woken again sooner.
 */
static uint64_t first_nap(uint32_t fetched_since_nap)
{
	return fetched_since_nap <= 2 ? NAP_SHORT_NS : NAP_NS;
}

/*
 * Where the daemon runs was measured too, and nothing kept (sim/README,
 * Timing, has the figures; bench/sched-costs.c measures the costs): on
 * the 2-core VM, moving itself to the core of the program that waits
 * costs 19-40 us a move, a hand-over to a thread there 16-26 us, against
 * one nap of 27-29 us a round trip.
 */

/*
 * How long to sleep: not at all for @spin after work (a reply is likely
 * near), then a little longer the longer nothing happened; until the next
 * retry timer at the latest; a second when no device is open.
 *
 * A nap costs about 19 us however short it is asked to be, on the 2-core
 * VM this was measured on at nice -5 (timer and switch; 25 us for 5 us,
 * 44 us for 20 us), and very short ones lose much: a daemon napping 2 us
 * at a time keeps too little of the scheduler's lag to be put ahead of a
 * polling client when it wakes (ib_send_lat went from about 50 us to
 * 2 ms).  At nice -20 a 10 us nap after a ping-pong's round trip gains
 * about 5 us a message (@first, from first_nap()).
 *
 * And every nap costs the daemon CPU time, the longer the more: on the
 * 2-core VM, 7-9 us for 20 us, 9-13 us for 100 us, 17-21 us for 1 ms,
 * 60-80 us for 10 ms (bench/sched-costs.c, "nap cpu").  So the naps
 * lengthen soon after work: 100 us until 10 ms of quiet, 1 ms until
 * 100 ms, then 10 ms.  With 100 us naps until 100 ms and 1 ms naps until
 * a second, as before, a program's pause of a second cost the daemon
 * about 25 ms of CPU (ib_send_bw's set-up: 26-29 ms against 12-14 now).
 * The price: the first doorbell after a pause of 10-100 ms waits up to
 * 1 ms, after a longer one up to 10 ms.
 *
 * While no QP is active (qp_set_state()), no doorbell can start work and
 * the daemon naps 10 ms at once: a program setting up, or a server
 * waiting for its client, costs it what an idle one does.  The naps stay
 * that short for the clock page (tick_clocks()) and for a CQ armed with
 * completions already in it.
 */
static uint64_t sleep_ns(uint64_t now, uint64_t idle_since, uint64_t spin,
			 uint64_t first, uint64_t deadline)
{
	uint64_t idle = now - idle_since, nap;

	if (!devices_open())
		nap = 1000000000ULL;
	else if (!sim.active_qps)
		nap = 10000000;
	else if (idle < spin)
		nap = 0;
	else if (idle < 2000000ULL)
		nap = first;
	else if (idle < 10000000ULL)
		nap = 100000;
	else if (idle < 100000000ULL)
		nap = 1000000;
	else
		nap = 10000000;
	if (deadline != UINT64_MAX)
		nap = MIN(nap, deadline > now ? deadline - now : 0);
	return nap;
}

/*
 * A daemon whose run directory was removed (its starter killed before it
 * could stop it) can serve no one new: it ends.
 */
static bool orphaned(uint64_t now)
{
	static uint64_t last;

	if (now - last < 1000000000ULL)
		return false;
	last = now;
	return access(socket_path, F_OK) != 0;
}

/*
 * epoll_pwait2(), which sleeps to the nanosecond; where the kernel (before
 * 5.11) or valgrind has it not, ppoll() on the epoll descriptor, then its
 * events without waiting.
 */
static int wait_events(int ep, struct epoll_event *events, int max,
		       const struct timespec *ts)
{
	static bool no_pwait2;
	struct pollfd p = { .fd = ep, .events = POLLIN };
	int n;

	if (!no_pwait2) {
		n = epoll_pwait2(ep, events, max, ts, NULL);
		if (n >= 0 || errno != ENOSYS)
			return n;
		no_pwait2 = true;
	}
	n = ppoll(&p, 1, ts, NULL);
	return n <= 0 ? n : epoll_wait(ep, events, max, 0);
}

static int serve(int ep)
{
	struct epoll_event events[MAX_EVENTS];
	uint64_t idle_since = now_ns(), last_flush = 0, spin = SPIN_MIN_NS;
	uint64_t last_sockets = 0;
	bool napped = false;		/* since the last work */

	for (;;) {
		uint64_t now = now_ns(), deadline = UINT64_MAX;
		struct timespec ts;
		uint64_t nap;
		int n;

		sim.work_done = false;
		doorbells_scan();
		req_run_waiting(now, &deadline);
		wire_timers(now, &deadline);
		uplink_poll(now, &deadline);	/* after all that sends */
		umad_timers(now, &deadline);
		timers_run(now, &deadline);
		if (now - last_flush > 1000000ULL) {
			resp_flush_errors();
			last_flush = now;
		}
		tick_clocks(now);
		cq_settle();	/* nothing waits past a pass */
		if (sim.work_done) {
			spin = spin_after_work(spin, napped);
			napped = false;
			idle_since = now;
		}
		if (orphaned(now)) {
			sim_log("run directory %s is gone: stopping", sim.opt.dir);
			return 0;
		}

		nap = sleep_ns(now, idle_since, spin,
			       napped ? NAP_NS : first_nap(sim.fetched), deadline);
		if (nap) {
			napped = true;
			sim.fetched = 0;
		}
		if (!nap && now - last_sockets < SOCKETS_EVERY_NS)
			continue;
		last_sockets = now;
		ts.tv_sec = nap / 1000000000;
		ts.tv_nsec = nap % 1000000000;
		n = wait_events(ep, events, MAX_EVENTS, &ts);
		if (n < 0 && errno != EINTR) {
			perror("mlx4simd: epoll_pwait2");
			return -1;
		}
		for (int i = 0; i < n; i++) {
			void *tag = events[i].data.ptr;

			if (tag == &uplink_tag) {
				continue;	/* uplink_poll() takes it */
			} else if (tag == &listen_fd) {
				accept_process(ep);
			} else if (tag == &signal_fd) {
				if (!take_signal())
					return 0;
			} else {
				struct sim_ctx *ctx = tag;

				if (ctx_handle_request(ctx)) {
					epoll_ctl(ep, EPOLL_CTL_DEL, ctx->sock, NULL);
					ctx_close(ctx);
				}
				cq_settle();
				idle_since = now_ns();
			}
		}
	}
}

/* A frame on the uplink wakes the loop, which takes it (uplink_poll). */
static int epoll_add_uplink(int ep)
{
	int fds[2], n = uplink_fds(fds);

	for (int i = 0; i < n; i++)
		if (fds[i] >= 0 && epoll_add(ep, fds[i], &uplink_tag))
			return -1;
	return 0;
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "we");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/*
 * Where a lower layer must reach a higher one, the higher one registers
 * itself here, at start: no layer calls up by name.
 */
static void connect_layers(void)
{
	/* The adapter's CQE batches go before any other DMA (host/dma.c). */
	dma_set_before_transfer(cq_flush_before);
	/* Packets the fabric held back land in the adapter's QPs. */
	flight_set_lander(packet_lands);
	/* Frames from the uplink reach the adapter's wire engine and rules. */
	uplink_set_receivers(wire_receive, raw_from_wire);
	/* What the adapter reports reaches the processes' event files. */
	event_listen_to_adapter();
}

/* The hosts' keepers go when the daemon fails. */
static int hosts_fail(void)
{
	hosts_stop();
	return 1;
}

/*
 * --hosts: each host's /etc/hosts names them all; each host's mount
 * namespace then, and "hosts" in the run directory tells programs to
 * join a host (preload.c).
 */
static int publish_hosts(void)
{
	char path[PATH_MAX], text[16];

	snprintf(path, sizeof(path), "%s/etc-hosts", sim.opt.dir);
	if (hosts_file_write(path) || hosts_publish())
		return -1;
	snprintf(text, sizeof(text), "%d\n", sim.opt.nhosts);
	write_file(sim.opt.dir, "hosts", text);
	return 0;
}

int main(int argc, char **argv)
{
	char path[PATH_MAX], staging[PATH_MAX], text[64];
	bool sysview;
	sigset_t mask;
	int ep;

	if (parse_options(argc, argv))
		return 2;
	list_init(&sim.ctxs);
	list_init(&sim.xrcds);
	list_init(&sim.mcast);
	list_init(&sim.flows);
	list_init(&sim.waiting);
	list_init(&sim.busy_sqs);
	list_init(&sim.error_qps);
	list_init(&sim.failing_qps);
	sim.start_ns = now_ns();
	connect_layers();

	/* Wake on time: the default timer slack would add 50 us a nap. */
	prctl(PR_SET_TIMERSLACK, 1000UL);
	/*
	 * An adapter does not wait for the host's CPUs: when it has work,
	 * the daemon goes ahead of the programs that poll their CQs, at
	 * the highest priority it is allowed (root, or RLIMIT_NICE); it
	 * naps when idle, so it takes only what the work needs.  At -5 a
	 * busy-polling pair kept it from its work for whole time slices
	 * (bench/README, scale.sh).
	 */
	for (int nice = -20; nice < 0; nice++)
		if (!setpriority(PRIO_PROCESS, 0, nice))
			break;
	signal(SIGPIPE, SIG_IGN);

	snprintf(path, sizeof(path), "%s/%s", sim.opt.dir, MLX4SIM_SYSFS_NAME);
	/*
	 * The uplink opens in the namespace we were started in; with
	 * --hosts, the hosts' namespaces come before their interfaces.
	 */
	if (uplink_init() || subnet_init() || hosts_start() || ether_init() ||
	    ipoib_init())
		return hosts_fail();
	if (sysfs_create(path)) {
		fprintf(stderr, "mlx4simd: cannot create the sysfs tree in %s\n",
			path);
		return hosts_fail();
	}
	/* Programs that read /sys by its name see the tree there too. */
	snprintf(staging, sizeof(staging), "%s/.host-sys", sim.opt.dir);
	sysview = sim.opt.nhosts ? false : !sysview_create(path, staging);
	if (sim.opt.nhosts && publish_hosts())
		return hosts_fail();
	if (sim.opt.pcap && pcap_open(sim.opt.pcap)) {
		fprintf(stderr, "mlx4simd: %s: %m\n", sim.opt.pcap);
		return 1;
	}
	if (sim.opt.trace && trace_open(sim.opt.trace)) {
		fprintf(stderr, "mlx4simd: %s: %m\n", sim.opt.trace);
		return 1;
	}
	listen_fd = open_socket(sim.opt.dir);
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGUSR1);
	sigaddset(&mask, SIGUSR2);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal_fd = signalfd(-1, &mask, SFD_CLOEXEC);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (listen_fd < 0 || signal_fd < 0 || ep < 0 ||
	    epoll_add(ep, listen_fd, &listen_fd) ||
	    epoll_add(ep, signal_fd, &signal_fd) || epoll_add_uplink(ep)) {
		fprintf(stderr, "mlx4simd: cannot set up: %m\n");
		return 1;
	}
	snprintf(text, sizeof(text), "%d\n", (int)getpid());
	write_file(sim.opt.dir, "pid", text);
	/* Programs join the daemon's network, where the ports' interfaces are. */
	if (sim.netns)
		write_file(sim.opt.dir, "netns", "");
	/* ... and its view of /sys (sysview.c). */
	if (sysview)
		write_file(sim.opt.dir, "mntns", "");
	write_file(sim.opt.dir, "ready", "");

	if (serve(ep))
		return hosts_fail();
	hosts_stop();

	while (!list_empty(&sim.ctxs))
		ctx_close(list_entry(sim.ctxs.next, struct sim_ctx, link));
	trace_close();
	pcap_close();
	/* The breaches that fail the run: none when not strict. */
	if (!sim.opt.strict)
		sim.breaches = 0;
	snprintf(text, sizeof(text), "%llu\n", (unsigned long long)sim.breaches);
	write_file(sim.opt.dir, "breaches", text);
	if (sim.breaches)
		fprintf(stderr, "mlx4sim: %llu strict-mode breach%s\n",
			(unsigned long long)sim.breaches,
			sim.breaches == 1 ? "" : "es");
	return sim.breaches ? 3 : 0;
}
