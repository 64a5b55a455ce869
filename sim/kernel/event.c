/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Event files: a context's async event file and its completion channels.
 *
 * The process holds one end of a socket pair that carries a byte for each
 * queued event, so poll, select and epoll on it work as on the kernel's
 * file; the other end is the daemon's alone, so that when the daemon dies
 * the process's end hangs up, and a program that only polls the file
 * wakes (an eventfd could not tell it: the process holds it too).  A
 * read takes one byte, then the event itself from here.  Destroying an
 * object drops its unread events, as the kernel does, and the daemon
 * takes their bytes back through its copy of the process's end; a byte
 * some reader already took then finds no event, and the reader waits
 * again.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kernel.h"

struct sim_event_file *event_file_new(struct sim_ctx *ctx, bool async)
{
	struct sim_event_file *file = calloc(1, sizeof(*file));
	int sv[2];

	if (!file)
		return NULL;
	/*
	 * Blocking: the process shares this file description, and its
	 * reads must block unless it asks otherwise.  Its end only reads.
	 */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		free(file);
		return NULL;
	}
	shutdown(sv[0], SHUT_WR);
	file->efd = sv[0];
	file->count_fd = sv[1];
	file->ctx = ctx;
	file->async = async;
	file->id = ++sim.next_event_file;
	list_init(&file->events);
	list_add_tail(&ctx->event_files, &file->link);
	return file;
}

void event_file_free(struct sim_event_file *file)
{
	struct sim_event *ev, *tmp;

	list_for_each_safe(&file->events, ev, tmp, struct sim_event, link) {
		list_del(&ev->link);
		free(ev);
	}
	close(file->efd);
	close(file->count_fd);
	list_del(&file->link);
	free(file);
}

struct sim_event_file *event_file_find(struct sim_ctx *ctx, uint32_t id)
{
	struct sim_event_file *file;

	list_for_each(&ctx->event_files, file, struct sim_event_file, link)
		if (file->id == id)
			return file;
	return NULL;
}

/*
 * One more byte for the process's end: an event, or a read that finds
 * none.  A full socket is a process that left some hundred thousand
 * events unread (or a hostile one): its bytes are moot, and not logged.
 */
void event_file_count(struct sim_event_file *file)
{
	cq_flush();	/* an event comes after its CQEs */
	if (send(file->count_fd, "", 1, MSG_DONTWAIT | MSG_NOSIGNAL) != 1 &&
	    errno != EAGAIN)
		sim_log("event file %u: count lost: %m", file->id);
}

static void queue(struct sim_event_file *file, uint64_t element,
		  uint32_t type, uint32_t *reported, const void *about)
{
	struct sim_event *ev = calloc(1, sizeof(*ev));

	if (!ev) {
		sim_log("out of memory: event lost");
		return;
	}
	ev->desc.element = element;
	ev->desc.event_type = type;
	ev->reported = reported;
	ev->about = about;
	list_add_tail(&file->events, &ev->link);
	event_file_count(file);
}

void event_post_async(struct sim_ctx *ctx, uint64_t element, uint32_t type,
		      uint32_t *reported, const void *about)
{
	if (ctx && ctx->async)
		queue(ctx->async, element, type, reported, about);
}

void event_post_comp(struct sim_cq *cq)
{
	if (cq->channel)
		queue(cq->channel, cq->uobj.user_handle, 0,
		      &cq->comp_events_reported, cq);
}

/*
 * The next event for a read of @len bytes, whose reader took a byte: its
 * size, 0 if none, -errno.
 */
int event_pop(struct sim_event_file *file, void *buf, size_t len)
{
	size_t size = file->async ? sizeof(struct ib_uverbs_async_event_desc) :
				    sizeof(struct ib_uverbs_comp_event_desc);
	struct sim_event *ev;

	/* The read fails and the event stays: so does its byte. */
	if (len < size) {
		event_file_count(file);
		return -EINVAL;
	}
	/*
	 * After a fatal error, once the events are read, the device is gone
	 * for every read: the byte stays for the next one.
	 */
	if (list_empty(&file->events)) {
		if (!file->ctx->fatal)
			return 0;
		event_file_count(file);
		return -EIO;
	}
	ev = list_entry(file->events.next, struct sim_event, link);
	memcpy(buf, &ev->desc, size);
	if (ev->reported)
		(*ev->reported)++;
	list_del(&ev->link);
	free(ev);
	return size;
}

/*
 * Take back the byte of a dropped event, without blocking: when a reader
 * already holds it, there is none to take, and the reader finds no event
 * and waits again.
 */
static void take_count(struct sim_event_file *file)
{
	char byte;

	if (recv(file->efd, &byte, 1, MSG_DONTWAIT) < 0 && errno != EAGAIN)
		sim_log("event file %u: %m", file->id);
}

void event_forget(struct sim_ctx *ctx, const void *about)
{
	struct sim_event_file *file;
	struct sim_event *ev, *tmp;

	if (!ctx)
		return;
	list_for_each(&ctx->event_files, file, struct sim_event_file, link) {
		list_for_each_safe(&file->events, ev, tmp, struct sim_event,
				   link) {
			if (ev->about != about)
				continue;
			list_del(&ev->link);
			free(ev);
			take_count(file);
		}
	}
}

/*
 * mlx4_ib's event handlers: what the adapter reports (adapter/eq.c)
 * becomes an event in the file of the process that owns its object.
 */
static const struct adapter_event_handlers to_event_files = {
	.completion = event_post_comp,
	.async = event_post_async,
};

void event_listen_to_adapter(void)
{
	adapter_set_event_handlers(&to_event_files);
}
