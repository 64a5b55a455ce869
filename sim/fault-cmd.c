/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mlx4sim-fault: what `mlx4sim fault` runs.  It checks the arguments,
 * opens a control connection to the daemon of the run directory it is
 * given and hands it one FAULT request (protocol.h).  Every error is a
 * message and exit status 2.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "host/protocol.h"

struct kind {
	const char *name;
	enum mlx4sim_fault_kind kind;
	unsigned int allowed;		/* MLX4SIM_FAULT_MATCH_* it takes */
	unsigned int required;
};

#define HCA	MLX4SIM_FAULT_MATCH_HCA
#define PORT	MLX4SIM_FAULT_MATCH_PORT
#define QPN	MLX4SIM_FAULT_MATCH_QPN

static const struct kind kinds[] = {
	{ "drop", MLX4SIM_FAULT_DROP, HCA | PORT | QPN, 0 },
	{ "duplicate", MLX4SIM_FAULT_DUPLICATE, HCA | PORT | QPN, 0 },
	{ "reorder", MLX4SIM_FAULT_REORDER, HCA | PORT | QPN, 0 },
	{ "delay", MLX4SIM_FAULT_DELAY, HCA | PORT | QPN, 0 },
	{ "rnr", MLX4SIM_FAULT_RNR, HCA | QPN, QPN },
	{ "port-down", MLX4SIM_FAULT_PORT_DOWN, HCA | PORT, 0 },
	{ "port-up", MLX4SIM_FAULT_PORT_UP, HCA | PORT, 0 },
	{ "qp-fatal", MLX4SIM_FAULT_QP_FATAL, HCA | QPN, QPN },
	{ "fatal", MLX4SIM_FAULT_FATAL, HCA, 0 },
	{ "clear", MLX4SIM_FAULT_CLEAR, 0, 0 },
	{ "status", MLX4SIM_FAULT_STATUS, 0, 0 },
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mlx4sim fault drop|duplicate|reorder (--rate P | --next N) [FILTER]\n"
		"       mlx4sim fault delay MS (--rate P | --next N) [FILTER]\n"
		"       mlx4sim fault rnr --qpn N [--hca N]\n"
		"       mlx4sim fault port-down|port-up [--hca N] [--port N]\n"
		"       mlx4sim fault qp-fatal --qpn N [--hca N]\n"
		"       mlx4sim fault fatal [--hca N]\n"
		"       mlx4sim fault clear\n"
		"       mlx4sim fault status\n"
		"FILTER: [--hca N] [--port N] [--qpn N], the end that sends the packet\n");
}

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;

	fputs("mlx4sim: fault: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

/* A whole number (decimal, or hex with 0x) from 0 to @max. */
static uint32_t number(const char *opt, const char *text, uint32_t max)
{
	unsigned long long v;
	char *end;

	if (!text)
		die("%s needs a value", opt);
	errno = 0;
	v = strtoull(text, &end, 0);
	if (!*text || *end || errno || text[0] == '-' || v > max)
		die("%s: '%s' is not a number from 0 to %u", opt, text, max);
	return v;
}

/* A probability, 0 < P <= 1, in parts per million. */
static uint32_t rate(const char *text)
{
	double p;
	char *end;

	if (!text)
		die("--rate needs a value");
	errno = 0;
	p = strtod(text, &end);
	if (!*text || *end || errno || !(p > 0 && p <= 1))
		die("--rate: '%s' is not a probability above 0 and at most 1", text);
	if (p * 1000000 < 1)
		die("--rate: '%s' is below one in a million", text);
	return (uint32_t)(p * 1000000 + 0.5);
}

static const struct kind *find_kind(const char *name)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(kinds[i].name, name))
			return &kinds[i];
	return NULL;
}

static void parse(int argc, char **argv, struct mlx4sim_fault *f)
{
	const struct kind *k;
	int i = 1;

	if (argc < 2) {
		usage(stderr);
		exit(2);
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		exit(0);
	}
	k = find_kind(argv[1]);
	if (!k)
		die("unknown fault '%s' (drop, duplicate, reorder, delay, rnr, port-down, port-up, qp-fatal, fatal, clear, status)",
		    argv[1]);
	f->magic = MLX4SIM_FAULT_MAGIC;
	f->kind = k->kind;
	if (k->kind == MLX4SIM_FAULT_DELAY) {
		if (++i >= argc || argv[i][0] == '-')
			die("delay: give the delay in milliseconds (delay MS ...)");
		f->delay_ms = number("delay", argv[i], 60000);
		if (!f->delay_ms)
			die("delay: 0 ms is no delay");
	}
	for (i++; i < argc; i++) {
		const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		unsigned int bit = 0;

		if (!strcmp(opt, "--hca")) {
			bit = HCA;
			f->hca = number(opt, val, 15);
		} else if (!strcmp(opt, "--port")) {
			bit = PORT;
			f->port = number(opt, val, 2);
			if (!f->port)
				die("--port: ports are numbered from 1");
		} else if (!strcmp(opt, "--qpn")) {
			bit = QPN;
			f->qpn = number(opt, val, 0xffffff);
		} else if (!strcmp(opt, "--next") &&
			   f->kind >= MLX4SIM_FAULT_DROP &&
			   f->kind <= MLX4SIM_FAULT_DELAY) {
			if (f->next || f->rate_ppm)
				die("give one of --rate and --next, once");
			f->next = number(opt, val, UINT32_MAX);
			if (!f->next)
				die("--next: 0 packets is no fault");
		} else if (!strcmp(opt, "--rate") &&
			   f->kind >= MLX4SIM_FAULT_DROP &&
			   f->kind <= MLX4SIM_FAULT_DELAY) {
			if (f->next || f->rate_ppm)
				die("give one of --rate and --next, once");
			f->rate_ppm = rate(val);
		} else {
			die("%s: unexpected argument '%s'", k->name, opt);
		}
		if (bit && !(k->allowed & bit))
			die("%s takes no %s", k->name, opt);
		if (bit && (f->match & bit))
			die("%s given twice", opt);
		f->match |= bit;
		i++;
	}
	if ((f->match & k->required) != k->required)
		die("%s needs --qpn N", k->name);
	if (f->kind >= MLX4SIM_FAULT_DROP && f->kind <= MLX4SIM_FAULT_DELAY &&
	    !f->next && !f->rate_ppm)
		die("%s needs --rate P or --next N", k->name);
}

static const char *daemon_error(int err, const struct mlx4sim_fault *f)
{
	static char text[128];

	switch (err) {
	case ENODEV:
		snprintf(text, sizeof(text), "no adapter %u on this subnet", f->hca);
		return text;
	case ENXIO:
		snprintf(text, sizeof(text), "no port %u on the adapters", f->port);
		return text;
	case ENOENT:
		snprintf(text, sizeof(text), "no QP 0x%x on the subnet", f->qpn);
		return text;
	case ENOSPC:
		return "too many faults at once (16): 'fault clear' first";
	case EACCES:
		return "the simulator belongs to another user";
	default:
		return strerror(err);
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct mlx4sim_fault f = {};
	struct {
		struct mlx4sim_request req;
		struct mlx4sim_fault fault;
	} msg;
	struct {
		struct mlx4sim_reply reply;
		struct mlx4sim_fault_counts counts;
	} answer;
	const struct mlx4sim_fault_counts *c = &answer.counts;
	const char *dir;
	ssize_t n;
	int sock;

	parse(argc, argv, &f);
	dir = getenv(MLX4SIM_ENV_DIR);
	if (!dir || !*dir)
		die("MLX4SIM_DIR is not set (no simulator started here)");
	if ((size_t)snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/%s", dir,
			     MLX4SIM_SOCKET_NAME) >= sizeof(addr.sun_path))
		die("run directory path too long: %s", dir);
	sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (sock < 0 || connect(sock, (void *)&addr, sizeof(addr)))
		die("no simulator at %s: %s", dir, strerror(errno));
	msg.req.op = MLX4SIM_OP_FAULT;
	msg.req.arg = 0;
	msg.fault = f;
	if (send(sock, &msg, sizeof(msg), MSG_NOSIGNAL) != sizeof(msg))
		die("cannot talk to the simulator: %s", strerror(errno));
	n = recv(sock, &answer, sizeof(answer), 0);
	if (n < (ssize_t)sizeof(answer.reply))
		die("the simulator did not answer");
	close(sock);
	if (answer.reply.ret < 0)
		die("%s", daemon_error(-answer.reply.ret, &f));
	if (n != sizeof(answer))
		die("the simulator's answer is %zd bytes, not %zu", n,
		    sizeof(answer));
	if (f.kind == MLX4SIM_FAULT_STATUS)
		printf("dropped %llu\nduplicated %llu\nreordered %llu\n"
		       "delayed %llu\nrnr %llu\nrules %u\n",
		       (unsigned long long)c->dropped,
		       (unsigned long long)c->duplicated,
		       (unsigned long long)c->reordered,
		       (unsigned long long)c->delayed,
		       (unsigned long long)c->rnr, c->rules);
	return 0;
}
