/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Timers for the connection manager: an address resolution's time limit,
 * a CM MAD's retry timeout, timewait, and the delivery of MADs on the
 * fabric, which arrive on the next pass of the loop rather than inside
 * the call that sent them (as the kernel's MAD layer hands them to a work
 * queue).  The loop (main.c) runs the timers due and sleeps no later than
 * the next one.  A timer is embedded in what it serves, which cancels it
 * before it goes.
 */
#include "cma.h"

static struct list_node timers = LIST_INIT(timers);

void timer_arm(struct sim_timer *timer, uint64_t delay_ns)
{
	timer_cancel(timer);
	timer->when = now_ns() + delay_ns;
	timer->armed = true;
	list_add_tail(&timers, &timer->link);
	sim.work_done = true;
}

void timer_cancel(struct sim_timer *timer)
{
	if (!timer->armed)
		return;
	list_del(&timer->link);
	timer->armed = false;
}

/*
 * The timers due fire, one at a time from the head of the list: a timer
 * that fires may arm, cancel or free others (and itself).
 */
void timers_run(uint64_t now, uint64_t *deadline)
{
	struct sim_timer *t;
	bool fired;

	do {
		fired = false;
		list_for_each(&timers, t, struct sim_timer, link) {
			if (t->when > now)
				continue;
			timer_cancel(t);
			t->fire(t);
			fired = true;
			break;
		}
	} while (fired);
	list_for_each(&timers, t, struct sim_timer, link)
		if (t->when < *deadline)
			*deadline = t->when;
}
