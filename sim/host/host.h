/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The host layer: where the simulated adapter meets the processes and the
 * machine.  DMA into process memory, the view of /sys, and the trace of
 * what crosses the boundary.  It calls nothing above it.
 */
#ifndef MLX4SIM_HOST_H
#define MLX4SIM_HOST_H

#include "../sim.h"
#include "vma.h"

/* dma.c: the device's reach into process memory */
struct dma_seg {
	uint64_t addr;
	uint32_t len;
};
/* Pieces of one transfer, which happen in order (see dma.c). */
struct dma_piece {
	uint64_t addr;
	void *buf;
	size_t len;
};
#define DMA_PIECES_MAX	64	/* in one ordered transfer */
typedef void dma_before_fn(pid_t pid, bool write, const struct dma_piece *p,
			   int n);
void dma_set_before_transfer(dma_before_fn *fn);
int dma_read_ordered(pid_t pid, const struct dma_piece *p, int n);
int dma_read_queue(pid_t pid, const struct dma_piece *p, int n);
int dma_write_ordered(pid_t pid, const struct dma_piece *p, int n);
int dma_write_batch(pid_t pid, const struct dma_piece *p, int n);
int dma_read(pid_t pid, uint64_t addr, void *buf, size_t len);
int dma_write(pid_t pid, uint64_t addr, const void *buf, size_t len);
int dma_readv(pid_t pid, const struct dma_seg *seg, int nseg, void *buf);
int dma_writev(pid_t pid, const struct dma_seg *seg, int nseg,
	       const void *buf, size_t len);
int dma_copy(pid_t src_pid, const struct dma_seg *src, int nsrc,
	     pid_t dst_pid, const struct dma_seg *dst, int ndst, size_t len);
void dma_store(void *to, const void *from, size_t len);
int dma_slice(const struct dma_seg *seg, int nseg, uint64_t off, uint64_t len,
	      struct dma_seg *out);
bool dma_range_mapped(pid_t pid, uint64_t addr, uint64_t len, bool write);

/* dma-share.c: pinned pages the daemon maps (windows) */
struct dma_range {
	uint64_t addr, len;
};
int dma_pins_hold(pid_t pid, struct sim_pins *pins, uint64_t lo, uint64_t hi,
		  struct dma_range *gaps, int max);
void dma_pins_release(struct sim_pins *pins);
int dma_window_add(pid_t pid, int fd, uint64_t addr, uint64_t len,
		   struct sim_pins *pins);
uint8_t *dma_window_find(pid_t pid, uint64_t addr, uint64_t *run);
bool dma_in_window(pid_t pid, uint64_t addr, uint64_t len);
uint32_t dma_windows(void);

/* A file a process shared, mapped here (dma-share.c). */
struct dma_window {
	uint64_t addr, len;		/* in the process */
	uint8_t *base;			/* the same pages, here */
	int refs;			/* objects that hold it */
	struct dma_space *space;
};

/*
 * Where [@addr, @addr + @len) is in a window @pins holds, or NULL: an
 * object's own pages, found without a search (inline: a message asks
 * for its regions', its queues' and its CQ's).
 */
static inline uint8_t *dma_pins_find(const struct sim_pins *pins,
				     uint64_t addr, uint64_t len)
{
	for (uint32_t i = 0; i < pins->n; i++) {
		const struct dma_window *w = pins->win[i];

		/* (Below the window, addr - w->addr wraps.) */
		if (addr - w->addr < w->len && w->len - (addr - w->addr) >= len)
			return w->base + (addr - w->addr);
	}
	return NULL;
}

/* userns.c: the daemon's user namespace, when it is not root. */
int sim_own_user_namespace(void);
/* One write of @text to a /proc or /sys file: 0 or -errno. */
int proc_write_text(const char *path, const char *text);
int write_text(const char *path, const char *text, int flags);

/* hosts.c: --hosts, a keeper process and namespaces for each host */
int hosts_start(void);
int hosts_publish(void);
void hosts_stop(void);
int host_of_pid(pid_t pid);
int hosts_enter_net(int host);
void hosts_leave_net(void);
pid_t host_keeper_pid(int host);
void hosts_answer(int ack, char what, int err);
void host_loopback_up(void);
/* rshd.c: a host's keeper runs mlx4sim-rsh's commands */
void rshd_serve(int host, int ack);

/* memlock.c: the bytes a process may keep pinned (UINT64_MAX: no bound). */
uint64_t proc_lock_limit(pid_t pid);

/* sysview.c: @tree laid over /sys in a mount namespace of the daemon's. */
int sysview_create(const char *tree, const char *staging);

/* trace.c: the trace (--trace), off unless sim_trace is open */
extern FILE *sim_trace;
#define TRACE(call) \
	do { \
		if (__builtin_expect(sim_trace != NULL, 0)) \
			call; \
	} while (0)
int trace_open(const char *path);
void trace_close(void);
void trace_open_file(const struct sim_ctx *ctx, uint32_t index);
void trace_close_file(const struct sim_ctx *ctx);
void trace_hex(const void *buf, size_t len);
void trace_send_doorbell(const struct sim_ctx *ctx, uint32_t value);
void trace_cq_doorbell(const struct sim_ctx *ctx, uint32_t word0,
		       uint32_t word1);
void trace_blueflame(const struct sim_ctx *ctx, unsigned int offset,
		     const char *verdict, enum ibv_qp_type type,
		     const uint8_t *wqe, size_t size);
void trace_send_wqe(const struct sim_qp *qp, uint32_t index,
		    const uint8_t *wqe, size_t room);
void trace_recv_wqe(const struct sim_qp *qp, uint32_t index,
		    const uint8_t *wqe, size_t size);
void trace_srq_wqe(const struct sim_srq *srq, uint32_t index,
		   const uint8_t *wqe, size_t size);
void trace_cqe(const struct sim_cq *cq, uint32_t index,
	       const struct mlx4_cqe *cqe);

#endif
