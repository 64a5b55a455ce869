/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A provider without a device, for unit tests and micro-benchmarks: a
 * context whose UAR and BlueFlame pages are plain memory, and queues
 * built by the provider's own sizing and allocation code but never
 * shown to a kernel.  Tests then read the rings byte by byte.
 */
#ifndef MLX4_PROVIDER_FAKE_H
#define MLX4_PROVIDER_FAKE_H

#include <stdint.h>
#include <stdio.h>

#include "mlx4.h"
#include "../tap.h"
#include "../cases.h"

struct fake_env {
	struct mlx4_device	dev;
	struct mlx4_context    *ctx;
	uint8_t		       *uar;
	uint8_t		       *bf;
	struct mlx4_pd		pd;
	struct ibv_pd	       *qp_pd;	/* fake_qp()'s PD or parent domain */
};

/* cqe_size 32 or 64; bf_reg_size 0 for no BlueFlame. */
void fake_env_init(struct fake_env *env, int cqe_size, int bf_reg_size);
void fake_env_cleanup(struct fake_env *env);

struct mlx4_cq *fake_cq(struct fake_env *env, int nent, uint32_t cqn);
void fake_cq_free(struct mlx4_cq *cq);

struct mlx4_srq *fake_srq(struct fake_env *env, uint32_t max_wr,
			  uint32_t max_sge, uint32_t srqn, int xrc,
			  struct mlx4_cq *cq);
void fake_srq_free(struct fake_env *env, struct mlx4_srq *srq);

struct mlx4_qp *fake_qp(struct fake_env *env, enum ibv_qp_type type,
			struct ibv_qp_cap *cap, struct mlx4_cq *send_cq,
			struct mlx4_cq *recv_cq, struct mlx4_srq *srq,
			uint32_t qpn, int sq_sig_all);
void fake_qp_free(struct mlx4_qp *qp);

/* ---------------------------------------------------------------------
 * Checks: TAP (tap.h), a line each; never stop at the first failure.
 */

#define CHECK_EQ(actual, expected) do {					\
	unsigned long long a_ = (unsigned long long)(actual);		\
	unsigned long long e_ = (unsigned long long)(expected);		\
	CHECK(a_ == e_, "%s = 0x%llx, expected 0x%llx", #actual, a_, e_); \
} while (0)

/*
 * Compare @len bytes at @actual with @hex, two hex digits per byte,
 * blanks ignored; '..' skips a byte.  A mismatch shows both.
 */
#define CHECK_BYTES(actual, hex) \
	check(bytes_match(actual, hex), "%s:%d: the bytes of %s", \
	      __FILE__, __LINE__, #actual)
int bytes_match(const void *actual, const char *hex);

#endif
