/* SPDX-License-Identifier: BSD-2-Clause */
/* A circular doubly linked list with the node embedded in its owner. */
#ifndef MLX4SIM_LIST_H
#define MLX4SIM_LIST_H

#include <stddef.h>
#include <stdbool.h>

struct list_node {
	struct list_node *next, *prev;
};

#define LIST_INIT(name) { &(name), &(name) }

static inline void list_init(struct list_node *head)
{
	head->next = head->prev = head;
}

static inline bool list_empty(const struct list_node *head)
{
	return head->next == head;
}

static inline void list_add_tail(struct list_node *head, struct list_node *n)
{
	n->prev = head->prev;
	n->next = head;
	head->prev->next = n;
	head->prev = n;
}

static inline void list_del(struct list_node *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = n;
}

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

#define list_entry(node, type, member) container_of(node, type, member)

/* Iterate over entries; safe against removal of the current entry. */
#define list_for_each_safe(head, pos, tmp, type, member)			\
	for (pos = list_entry((head)->next, type, member),			\
	     tmp = list_entry(pos->member.next, type, member);			\
	     &pos->member != (head);						\
	     pos = tmp, tmp = list_entry(tmp->member.next, type, member))

#define list_for_each(head, pos, type, member)				\
	for (pos = list_entry((head)->next, type, member);			\
	     &pos->member != (head);						\
	     pos = list_entry(pos->member.next, type, member))

#endif
