/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What sshd is to a host, for mlx4sim-rsh: a host's keeper (hosts.c)
 * listens on node<N>/rsh in the run directory; each connection asks for
 * one command, which runs in the host's namespaces as "/bin/sh -c
 * COMMAND", as ssh runs it through the user's shell.
 *
 * The request (rsh.h): a header with the length of the text that
 * follows, and the client's standard input, output and error passed as
 * descriptors, which the command gets as its own, so nothing is copied
 * and a pipe's end-of-file, a terminal's mode and a short write behave
 * as they would have locally; then the working directory, the command
 * and the environment, each ended by a NUL.  The answer is the command's
 * exit status (128 + N for a command killed by signal N, as a shell
 * reports it).  A client that goes away takes its command with it:
 * SIGHUP to the command's session, as sshd's closing its terminal does,
 * then SIGKILL two seconds on.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host.h"
#include "rsh.h"

struct rsh_request {
	int fds[3];
	char *text;		/* cwd, command, environment */
	size_t len;
};

static int read_full(int fd, void *buf, size_t len)
{
	for (size_t done = 0; done < len;) {
		ssize_t n = read(fd, (char *)buf + done, len - done);

		if (n <= 0)
			return -1;
		done += n;
	}
	return 0;
}

/* The header and its three descriptors, then the text. */
static int receive_request(int conn, struct rsh_request *r)
{
	char control[CMSG_SPACE(3 * sizeof(int))];
	struct rsh_header h;
	struct iovec iov = { &h, sizeof(h) };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = control, .msg_controllen = sizeof(control),
	};
	struct cmsghdr *cm;

	r->fds[0] = r->fds[1] = r->fds[2] = -1;
	if (recvmsg(conn, &msg, MSG_CMSG_CLOEXEC | MSG_WAITALL) != sizeof(h))
		return -1;
	cm = CMSG_FIRSTHDR(&msg);
	if (!cm || cm->cmsg_type != SCM_RIGHTS ||
	    cm->cmsg_len != CMSG_LEN(3 * sizeof(int)))
		return -1;
	memcpy(r->fds, CMSG_DATA(cm), sizeof(r->fds));
	if (h.magic != RSH_MAGIC || !h.len || h.len > RSH_MAX_TEXT)
		return -1;
	r->len = h.len;
	r->text = malloc(h.len + 1);
	if (!r->text || read_full(conn, r->text, h.len))
		return -1;
	r->text[h.len] = 0;	/* ends the last string whatever was sent */
	return 0;
}

/* The environment's strings, as the client sent them. */
static char **environment(char *text, size_t len)
{
	size_t n = 0, count = 1;
	char **env;

	for (size_t i = 0; i < len; i++)
		count += !text[i];
	env = calloc(count, sizeof(*env));
	if (!env)
		return NULL;
	for (char *s = text; s < text + len && n < count - 1; s += strlen(s) + 1)
		env[n++] = s;
	return env;
}

/* The command's process: its own session, the client's descriptors. */
static void run_command(const struct rsh_request *r)
{
	const char *cwd = r->text, *cmd = cwd + strlen(cwd) + 1;
	char *env_text = (char *)cmd + strlen(cmd) + 1;
	char **env;
	sigset_t none;

	if (cmd >= r->text + r->len)
		_exit(255);
	env = environment(env_text, r->text + r->len - env_text);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
	setsid();
	for (int i = 0; i < 3; i++)
		if (dup2(r->fds[i], i) < 0)
			_exit(255);
	if (chdir(cwd) && chdir("/"))
		_exit(255);
	if (!env)
		_exit(255);
	execve("/bin/sh", (char *[]){ "sh", "-c", (char *)cmd, NULL }, env);
	_exit(127);
}

static int exit_code(int status)
{
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

/*
 * Wait for the command (its SIGCHLD on @sfd) or the client's going
 * (@conn readable: nothing more is sent, so that is its end).
 */
static int wait_command(pid_t pid, int conn, int sfd)
{
	struct pollfd p[2] = {
		{ .fd = conn, .events = POLLIN | POLLRDHUP },
		{ .fd = sfd, .events = POLLIN },
	};
	int status, timeout = -1;

	for (;;) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return exit_code(status);
		if (poll(p, 2, timeout) == 0) {
			kill(-pid, SIGKILL);	/* two seconds after SIGHUP */
			timeout = -1;
		}
		if (p[1].revents) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) < 0 && errno != EAGAIN)
				return 255;
		}
		if (p[0].revents && p[0].fd >= 0) {
			kill(-pid, SIGHUP);
			kill(-pid, SIGCONT);
			p[0].fd = -1;
			timeout = 2000;
		}
	}
}

static void serve_connection(int conn)
{
	struct rsh_request r = {};
	sigset_t chld;
	int sfd, code = 255;
	pid_t pid;

	signal(SIGCHLD, SIG_DFL);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0 || receive_request(conn, &r))
		_exit(1);
	pid = fork();
	if (pid == 0)
		run_command(&r);
	for (int i = 0; i < 3; i++)
		close(r.fds[i]);
	if (pid > 0)
		code = wait_command(pid, conn, sfd);
	if (write(conn, &code, sizeof(code)) != sizeof(code))
		_exit(1);
	_exit(0);
}

static int listen_here(int host)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd, n;

	n = snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/node%d/%s",
		     sim.opt.dir, host + 1, RSH_SOCKET_NAME);
	if (n < 0 || n >= (int)sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (void *)&addr, sizeof(addr)) ||
	    listen(fd, 128))
		return -errno;
	return fd;
}

/*
 * The keeper's loop: a process for each connection, which runs the
 * command and reports its status.  @ack hears that the socket is there.
 */
void rshd_serve(int host, int ack)
{
	int fd = listen_here(host), conn;

	if (fd < 0) {
		hosts_answer(ack, 'e', fd);
		return;
	}
	hosts_answer(ack, 'm', 0);
	close(ack);
	signal(SIGCHLD, SIG_IGN);	/* the connections' processes reap */
	signal(SIGTERM, SIG_DFL);
	for (;;) {
		conn = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
		if (conn < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return;
		}
		if (fork() == 0) {
			close(fd);
			serve_connection(conn);
		}
		close(conn);
	}
}
