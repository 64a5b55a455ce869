/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Open addressing with linear probing.  Lookups happen for every doorbell
 * and every packet; inserts and deletes only on create and destroy.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"

struct sim_table_slot {
	uint32_t key;
	enum { SLOT_FREE, SLOT_LIVE, SLOT_DELETED } state;
	void *value;
};

static uint32_t hash(uint32_t key)
{
	key ^= key >> 16;
	key *= 0x7feb352d;
	key ^= key >> 15;
	return key;
}

static struct sim_table_slot *find(const struct sim_table *t, uint32_t key)
{
	uint32_t mask = t->size - 1;

	if (!t->size)
		return NULL;
	for (uint32_t i = hash(key) & mask;; i = (i + 1) & mask) {
		struct sim_table_slot *s = &t->slot[i];

		if (s->state == SLOT_FREE)
			return NULL;
		if (s->state == SLOT_LIVE && s->key == key)
			return s;
	}
}

/* table_get() past the memo: the slot, and the memo then holds it. */
void *table_lookup(struct sim_table *t, uint32_t key)
{
	struct sim_table_slot *s = find(t, key);

	if (!s)
		return NULL;
	t->memo[key % TABLE_MEMO].key = key;
	t->memo[key % TABLE_MEMO].value = s->value;
	return s->value;
}

static int grow(struct sim_table *t)
{
	struct sim_table old = *t;
	uint32_t size = t->size ? t->size * 2 : 64;

	/* Rehash in place when deletions, not entries, filled the table. */
	if (t->used * 4 < t->size)
		size = t->size;
	t->slot = calloc(size, sizeof(*t->slot));
	if (!t->slot) {
		*t = old;
		return -ENOMEM;
	}
	t->size = size;
	t->used = t->filled = 0;
	for (uint32_t i = 0; i < old.size; i++)
		if (old.slot[i].state == SLOT_LIVE)
			table_put(t, old.slot[i].key, old.slot[i].value);
	free(old.slot);
	return 0;
}

int table_put(struct sim_table *t, uint32_t key, void *value)
{
	uint32_t mask;

	if (find(t, key))
		return -EEXIST;
	if ((t->filled + 1) * 2 > t->size && grow(t))
		return -ENOMEM;
	mask = t->size - 1;
	for (uint32_t i = hash(key) & mask;; i = (i + 1) & mask) {
		struct sim_table_slot *s = &t->slot[i];

		if (s->state != SLOT_LIVE) {
			if (s->state == SLOT_FREE)
				t->filled++;
			s->state = SLOT_LIVE;
			s->key = key;
			s->value = value;
			t->used++;
			return 0;
		}
	}
}

void table_del(struct sim_table *t, uint32_t key)
{
	struct sim_table_slot *s = find(t, key);

	if (s) {
		s->state = SLOT_DELETED;
		s->value = NULL;
		t->used--;
	}
	if (t->memo[key % TABLE_MEMO].key == key)
		t->memo[key % TABLE_MEMO].value = NULL;
}

void table_free(struct sim_table *t)
{
	free(t->slot);
	t->slot = NULL;
	t->size = t->used = t->filled = 0;
	memset(t->memo, 0, sizeof(t->memo));
}
