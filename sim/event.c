/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Event files: a context's async event file and its completion channels.
 *
 * The process holds an eventfd (semaphore mode) that counts the queued
 * events, so poll, select and epoll on it work as on the kernel's file.
 * A read takes one count from the eventfd, then the event itself from
 * here.  Destroying an object drops its unread events, as the kernel
 * does, and takes their counts back; a count some reader already took
 * then finds no event, and the reader waits again.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include "sim.h"

struct sim_event_file *event_file_new(struct sim_ctx *ctx, bool async)
{
	struct sim_event_file *file = calloc(1, sizeof(*file));

	if (!file)
		return NULL;
	/*
	 * Blocking: the process shares this file description, and its
	 * reads must block unless it asks otherwise.
	 */
	file->efd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
	if (file->efd < 0) {
		free(file);
		return NULL;
	}
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

static void queue(struct sim_event_file *file, uint64_t element,
		  uint32_t type, uint32_t *reported, const void *about)
{
	struct sim_event *ev = calloc(1, sizeof(*ev));
	uint64_t one = 1;

	if (!ev) {
		sim_log("out of memory: event lost");
		return;
	}
	ev->desc.element = element;
	ev->desc.event_type = type;
	ev->reported = reported;
	ev->about = about;
	list_add_tail(&file->events, &ev->link);
	if (write(file->efd, &one, sizeof(one)) != sizeof(one))
		sim_log("event file %u: eventfd: %m", file->id);
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

/* The next event for a read of @len bytes: its size, 0 if none, -errno. */
int event_pop(struct sim_event_file *file, void *buf, size_t len)
{
	size_t size = file->async ? sizeof(struct ib_uverbs_async_event_desc) :
				    sizeof(struct ib_uverbs_comp_event_desc);
	struct sim_event *ev;

	if (len < size)
		return -EINVAL;
	/* After a fatal error, once the events are read: the device is gone. */
	if (list_empty(&file->events))
		return file->ctx->fatal ? -EIO : 0;
	ev = list_entry(file->events.next, struct sim_event, link);
	memcpy(buf, &ev->desc, size);
	if (ev->reported)
		(*ev->reported)++;
	list_del(&ev->link);
	free(ev);
	return size;
}

/*
 * Take back the count of a dropped event, without blocking: when a reader
 * already holds that count, there is none to take, and the reader finds
 * no event and waits again.  Where the kernel cannot read an eventfd
 * without blocking, the count stays: a spurious wakeup, nothing worse.
 */
static void take_count(struct sim_event_file *file)
{
	uint64_t count;
	struct iovec iov = { &count, sizeof(count) };

	if (preadv2(file->efd, &iov, 1, -1, RWF_NOWAIT) < 0 &&
	    errno != EAGAIN && errno != EOPNOTSUPP)
		sim_log("event file %u: eventfd: %m", file->id);
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
