/* SPDX-License-Identifier: BSD-2-Clause */
/* A map from 32-bit numbers (QPN, CQN, key index...) to objects. */
#ifndef MLX4SIM_TABLE_H
#define MLX4SIM_TABLE_H

#include <stdint.h>

struct sim_table_slot;

struct sim_table {
	struct sim_table_slot *slot;
	uint32_t size;			/* power of two, or 0 */
	uint32_t used;			/* live entries */
	uint32_t filled;		/* live and deleted */
};

void *table_get(const struct sim_table *t, uint32_t key);
int table_put(struct sim_table *t, uint32_t key, void *value);
void table_del(struct sim_table *t, uint32_t key);
void table_free(struct sim_table *t);

#endif
