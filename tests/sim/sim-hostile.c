/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sim-hostile: a client of the mlx4sim daemon that breaks the preload's
 * protocol on purpose, talking to the daemon's socket directly.
 *
 *   sim-hostile empty-datagram   an empty request, then a real one: the
 *                                daemon must answer the second and keep
 *                                the connection
 *   sim-hostile flood SECONDS    requests sent without ever reading a
 *                                reply, the connection held open for
 *                                SECONDS: other processes must not stall
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "../../sim/protocol.h"

static int connect_daemon(void)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	const char *dir = getenv(MLX4SIM_ENV_DIR);
	int fd;

	if (!dir) {
		fprintf(stderr, "sim-hostile: %s is not set\n", MLX4SIM_ENV_DIR);
		exit(1);
	}
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/%s", dir,
		 MLX4SIM_SOCKET_NAME);
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		perror("sim-hostile: connect");
		exit(1);
	}
	return fd;
}

static void send_open(int fd, int flags)
{
	struct mlx4sim_request req = { .op = MLX4SIM_OP_OPEN, .arg = 0 };

	if (send(fd, &req, sizeof(req), flags) != sizeof(req) &&
	    !(flags & MSG_DONTWAIT)) {
		perror("sim-hostile: send");
		exit(1);
	}
}

/* The reply's ret, or exits when the daemon closed the connection. */
static int read_reply(int fd)
{
	struct mlx4sim_reply reply;
	ssize_t n = recv(fd, &reply, sizeof(reply), 0);

	if (n != sizeof(reply)) {
		fprintf(stderr, "sim-hostile: no reply (%zd: %s)\n", n,
			n < 0 ? strerror(errno) : "connection closed");
		exit(1);
	}
	return reply.ret;
}

static int empty_datagram(void)
{
	int fd = connect_daemon();
	int ret;

	send_open(fd, 0);
	if ((ret = read_reply(fd))) {
		fprintf(stderr, "sim-hostile: open uverbs0: %d\n", ret);
		return 1;
	}
	if (send(fd, "", 0, 0) != 0) {
		perror("sim-hostile: send empty");
		return 1;
	}
	/* The context is still there: a second open is refused, EINVAL. */
	send_open(fd, 0);
	ret = read_reply(fd);
	if (ret != -EINVAL) {
		fprintf(stderr, "sim-hostile: second open: %d, not -EINVAL\n",
			ret);
		return 1;
	}
	printf("the connection survived an empty datagram\n");
	return 0;
}

static int flood(int seconds)
{
	int fd = connect_daemon();
	int sent = 0;

	/* Fill the daemon's way back to us; stop when our side is full. */
	for (int i = 0; i < 100000; i++) {
		struct mlx4sim_request req = { .op = MLX4SIM_OP_OPEN };

		if (send(fd, &req, sizeof(req), MSG_DONTWAIT) != sizeof(req))
			break;
		sent++;
	}
	printf("sent %d requests without reading a reply\n", sent);
	fflush(stdout);
	sleep(seconds);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "empty-datagram"))
		return empty_datagram();
	if (argc == 3 && !strcmp(argv[1], "flood"))
		return flood(atoi(argv[2]));
	fprintf(stderr, "usage: sim-hostile empty-datagram | flood SECONDS\n");
	return 2;
}
