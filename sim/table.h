/* SPDX-License-Identifier: BSD-2-Clause */
/* A map from 32-bit numbers (QPN, CQN, key index...) to objects. */
#ifndef MLX4SIM_TABLE_H
#define MLX4SIM_TABLE_H

#include <stdint.h>

struct sim_table_slot;

/*
 * The entries found last, by the low bits of their keys: a message looks
 * up a few objects (its destination QP, the regions of both ends), the
 * same ones message after message.  An entry leaves when its key is
 * deleted.
 */
#define TABLE_MEMO	4

struct sim_table {
	struct sim_table_slot *slot;
	uint32_t size;			/* power of two, or 0 */
	uint32_t used;			/* live entries */
	uint32_t filled;		/* live and deleted */
	struct {
		uint32_t key;
		void *value;		/* NULL: none */
	} memo[TABLE_MEMO];
};

void *table_lookup(struct sim_table *t, uint32_t key);

static inline void *table_get(struct sim_table *t, uint32_t key)
{
	if (t->memo[key % TABLE_MEMO].value &&
	    t->memo[key % TABLE_MEMO].key == key)
		return t->memo[key % TABLE_MEMO].value;
	return table_lookup(t, key);
}
int table_put(struct sim_table *t, uint32_t key, void *value);
void table_del(struct sim_table *t, uint32_t key);
void table_free(struct sim_table *t);

#endif
