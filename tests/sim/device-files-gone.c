/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * device-files-gone: when the simulator's daemon dies, the device is gone,
 * as after a fatal error that uverbs turns into a disassociated device:
 * a thread blocked in ibv_get_async_event gets IBV_EVENT_DEVICE_FATAL, one
 * blocked in ibv_get_cq_event returns with an error, later event reads
 * fail with EIO, and verbs fail.  Nothing waits for ever.
 *
 * It kills the daemon itself ($MLX4SIM_DIR/pid) once both threads wait.
 *
 * `device-files-gone poll`: a program that waits only in poll() and
 * epoll_wait() on the two event files wakes too, and then reads what the
 * blocked reads got.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "../tap.h"

static struct ibv_context *ctx;
static struct ibv_comp_channel *channel;

static struct {
	int async_ret, async_type, cq_ret, cq_errno;
	bool async_done, cq_done;
} out;

static void *wait_async(void *unused)
{
	struct ibv_async_event ev;

	(void)unused;
	out.async_ret = ibv_get_async_event(ctx, &ev);
	if (!out.async_ret) {
		out.async_type = ev.event_type;
		ibv_ack_async_event(&ev);
	}
	__atomic_store_n(&out.async_done, true, __ATOMIC_RELEASE);
	return NULL;
}

static void *wait_cq(void *unused)
{
	struct ibv_cq *cq;
	void *cq_ctx;

	(void)unused;
	out.cq_ret = ibv_get_cq_event(channel, &cq, &cq_ctx);
	out.cq_errno = errno;
	__atomic_store_n(&out.cq_done, true, __ATOMIC_RELEASE);
	return NULL;
}

static void kill_daemon(void)
{
	const char *dir = getenv("MLX4SIM_DIR");
	char path[4096];
	FILE *f;
	int pid = 0;

	snprintf(path, sizeof(path), "%s/pid", dir ? dir : ".");
	f = fopen(path, "r");
	if (!f || fscanf(f, "%d", &pid) != 1 || pid <= 0)
		bail("the daemon's pid");
	fclose(f);
	if (kill(pid, SIGKILL))
		bail("kill the daemon");
}

/* Whether @flag is set within 10 seconds. */
static bool done_within(bool *flag)
{
	for (int i = 0; i < 1000; i++) {
		if (__atomic_load_n(flag, __ATOMIC_ACQUIRE))
			return true;
		usleep(10000);
	}
	return false;
}

static void *kill_later(void *unused)
{
	(void)unused;
	usleep(200000);			/* the poll waits now */
	kill_daemon();
	return NULL;
}

/* Only poll() and epoll_wait() on the event files, as an event loop does. */
static int poll_only(struct ibv_cq *cq)
{
	struct pollfd p[2] = {
		{ .fd = ctx->async_fd, .events = POLLIN },
		{ .fd = channel->fd, .events = POLLIN },
	};
	struct epoll_event ev = { .events = EPOLLIN }, got[2];
	struct ibv_async_event aev;
	pthread_t killer;
	void *cq_ctx;
	int ep = epoll_create1(EPOLL_CLOEXEC);
	int n, ret;

	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, p[0].fd, &ev) ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, p[1].fd, &ev))
		bail("epoll");
	if (pthread_create(&killer, NULL, kill_later, NULL))
		bail("pthread_create");
	/*
	 * The two files hang up as the kernel closes the daemon's ends, one
	 * after the other: poll() may wake with one; poll on for the other.
	 */
	n = poll(p, 2, 10000);
	for (int i = 0; n > 0 && i < 2; i++) {
		short seen = p[i].revents;
		struct pollfd rest = { .fd = p[i].fd, .events = POLLIN };

		if (!seen && poll(&rest, 1, 10000) == 1)
			seen = rest.revents;
		p[i].revents = seen;
	}
	check(n > 0 && (p[0].revents & (POLLIN | POLLHUP)) &&
	      (p[1].revents & (POLLIN | POLLHUP)),
	      "poll() on the async file and the completion channel wakes when the daemon dies (%d ready first, revents 0x%x 0x%x)",
	      n, p[0].revents, p[1].revents);
	pthread_join(killer, NULL);
	n = epoll_wait(ep, got, 2, 1000);
	check(n == 2, "epoll_wait() sees both files ready (%d)", n);

	ret = ibv_get_async_event(ctx, &aev);
	check(ret == 0 && aev.event_type == IBV_EVENT_DEVICE_FATAL,
	      "then ibv_get_async_event gives IBV_EVENT_DEVICE_FATAL (%s)",
	      ret ? "it fails" : ibv_event_type_str(aev.event_type));
	if (!ret)
		ibv_ack_async_event(&aev);
	errno = 0;
	ret = ibv_get_cq_event(channel, &cq, &cq_ctx);
	check(ret == -1, "and ibv_get_cq_event fails (%s)", strerror(errno));
	close(ep);
	return tap_finish();
}

int main(int argc, char **argv)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device_attr attr;
	struct ibv_async_event ev;
	pthread_t async_thread, cq_thread;
	bool async_done, cq_done;
	struct ibv_cq *cq;
	int ret;

	if (!list || !list[0])
		bail("no RDMA device");
	ctx = ibv_open_device(list[0]);
	if (!ctx)
		bail("ibv_open_device");
	channel = ibv_create_comp_channel(ctx);
	cq = channel ? ibv_create_cq(ctx, 16, NULL, channel, 0) : NULL;
	if (!cq || ibv_req_notify_cq(cq, 0))
		bail("a CQ on a completion channel");
	if (argc > 1 && !strcmp(argv[1], "poll"))
		return poll_only(cq);
	if (pthread_create(&async_thread, NULL, wait_async, NULL) ||
	    pthread_create(&cq_thread, NULL, wait_cq, NULL))
		bail("pthread_create");
	usleep(200000);			/* both are waiting now */
	kill_daemon();

	async_done = done_within(&out.async_done);
	check(async_done && out.async_ret == 0 &&
	      out.async_type == IBV_EVENT_DEVICE_FATAL,
	      "a blocked ibv_get_async_event gets IBV_EVENT_DEVICE_FATAL (%s)",
	      !async_done ? "still waiting" : out.async_ret ? "it fails" :
	      ibv_event_type_str(out.async_type));
	cq_done = done_within(&out.cq_done);
	check(cq_done && out.cq_ret == -1, "a blocked ibv_get_cq_event fails (%s)",
	      cq_done ? strerror(out.cq_errno) : "still waiting");
	if (!async_done || !cq_done)
		return tap_finish();	/* the threads still wait: exit */
	pthread_join(async_thread, NULL);
	pthread_join(cq_thread, NULL);

	errno = 0;
	ret = ibv_get_async_event(ctx, &ev);
	check(ret == -1 && errno == EIO,
	      "then ibv_get_async_event fails with EIO (%d, %s)", ret,
	      strerror(errno));
	ret = ibv_query_device(ctx, &attr);
	check(ret != 0, "and ibv_query_device fails (%s)", strerror(ret));
	return tap_finish();
}
