/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mlx4sim-rsh-cmd [-n] DIR HOST COMMAND: the part of mlx4sim-rsh that
 * talks to HOST's keeper in run directory DIR (host/rshd.c).  It passes
 * its standard input (or /dev/null with -n), output and error, the
 * working directory, COMMAND and its environment, then waits for the
 * command's exit status and exits with it; 255 when HOST cannot be
 * reached, as ssh does.  Killed, it closes the connection, which ends
 * the command (SIGHUP), as ssh's going hangs up a remote session.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "host/rsh.h"

extern char **environ;

static int connect_host(const char *dir, const char *host)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd, n;

	n = snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/%s/%s", dir,
		     host, RSH_SOCKET_NAME);
	if (n < 0 || n >= (int)sizeof(addr.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (void *)&addr, sizeof(addr))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The working directory, the command, then each environment string. */
static char *request_text(const char *cmd, uint32_t *len)
{
	char cwd[PATH_MAX];
	size_t size, used = 0;
	char *text;

	if (!getcwd(cwd, sizeof(cwd)))
		strcpy(cwd, "/");
	size = strlen(cwd) + strlen(cmd) + 2;
	for (char **e = environ; *e; e++)
		size += strlen(*e) + 1;
	if (size > RSH_MAX_TEXT)
		return NULL;
	text = malloc(size);
	if (!text)
		return NULL;
	used += sprintf(text, "%s", cwd) + 1;
	used += sprintf(text + used, "%s", cmd) + 1;
	for (char **e = environ; *e; e++)
		used += sprintf(text + used, "%s", *e) + 1;
	*len = used;
	return text;
}

/* A descriptor the process does not have goes as /dev/null. */
static int std_fd(int fd, bool null)
{
	if (!null && fcntl(fd, F_GETFD) >= 0)
		return fd;
	return open("/dev/null", fd ? O_WRONLY : O_RDONLY);
}

static int send_request(int sock, const char *cmd, bool no_stdin)
{
	int fds[3] = { std_fd(0, no_stdin), std_fd(1, false), std_fd(2, false) };
	char control[CMSG_SPACE(sizeof(fds))] = {};
	struct rsh_header h = { .magic = RSH_MAGIC };
	struct iovec iov = { &h, sizeof(h) };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = control, .msg_controllen = sizeof(control),
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	char *text = request_text(cmd, &h.len);

	if (!text || fds[0] < 0 || fds[1] < 0 || fds[2] < 0)
		return -1;
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(cm), fds, sizeof(fds));
	if (sendmsg(sock, &msg, MSG_NOSIGNAL) != sizeof(h))
		return -1;
	for (size_t done = 0; done < h.len;) {
		ssize_t n = send(sock, text + done, h.len - done, MSG_NOSIGNAL);

		if (n <= 0)
			return -1;
		done += n;
	}
	free(text);
	return 0;
}

int main(int argc, char **argv)
{
	bool no_stdin = argc > 1 && !strcmp(argv[1], "-n");
	int sock, code;

	argv += no_stdin;
	argc -= no_stdin;
	if (argc != 4) {
		fprintf(stderr, "usage: mlx4sim-rsh-cmd [-n] DIR HOST COMMAND\n");
		return 255;
	}
	sock = connect_host(argv[1], argv[2]);
	if (sock < 0) {
		fprintf(stderr, "mlx4sim-rsh: %s: no such host in this run (%s)\n",
			argv[2], strerror(errno));
		return 255;
	}
	if (send_request(sock, argv[3], no_stdin)) {
		fprintf(stderr, "mlx4sim-rsh: %s: cannot send the command: %s\n",
			argv[2], strerror(errno));
		return 255;
	}
	/* Our copies of the descriptors stay open: the command has its own. */
	if (read(sock, &code, sizeof(code)) != sizeof(code)) {
		fprintf(stderr, "mlx4sim-rsh: %s: the connection was lost\n",
			argv[2]);
		return 255;
	}
	return code & 0xff;
}
