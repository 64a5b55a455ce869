/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * epoll_pwait2 for a daemon built with MemorySanitizer (tests/sim/sanitizers.tap).
 *
 * The sanitizer's runtime has no wrapper for this system call, so it
 * cannot know that the kernel filled the events: every one would read as
 * never set.  This one makes the call itself and says which bytes the
 * kernel wrote.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <sanitizer/msan_interface.h>

int epoll_pwait2(int epfd, struct epoll_event *events, int maxevents,
		 const struct timespec *timeout, const sigset_t *sigmask)
{
	long n = syscall(SYS_epoll_pwait2, epfd, events, maxevents, timeout,
			 sigmask, sigmask ? _NSIG / 8 : 0);

	if (n > 0)
		__msan_unpoison(events, n * sizeof(*events));
	return n;
}
