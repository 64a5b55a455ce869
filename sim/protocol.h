/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The wire between the preload library and the mlx4sim daemon.
 *
 * A process that opens /dev/infiniband/uverbsN gets, in place of the
 * character device, one end of a SOCK_SEQPACKET connection to the daemon.
 * Everything the kernel would do on that file is one request and one reply
 * on the connection: a uverbs command written to it, an mmap of one of its
 * pages, a read of one of the event files it created.  The daemon plays
 * the kernel: it answers with the bytes the kernel would copy to the
 * caller and, where the kernel would install a new file descriptor, passes
 * one with SCM_RIGHTS.
 *
 * Requests and replies are single datagrams; the preload holds the
 * connection's lock from request to reply, so they never interleave.
 */
#ifndef MLX4SIM_PROTOCOL_H
#define MLX4SIM_PROTOCOL_H

#include <stdint.h>

/* Environment of a process that sees a simulator. */
#define MLX4SIM_ENV_DIR		"MLX4SIM_DIR"	/* run directory */
#define MLX4SIM_SOCKET_NAME	"sock"		/* in the run directory */
#define MLX4SIM_SYSFS_NAME	"sys"		/* in the run directory */

/* The uverbs character devices: major 231, minors from 192. */
#define MLX4SIM_UVERBS_MAJOR	231
#define MLX4SIM_UVERBS_MINOR0	192

/* Largest request or reply datagram. */
#define MLX4SIM_MAX_MSG		(64 * 1024)

enum mlx4sim_op {
	/* First request on a connection: which uverbsN was opened (arg). */
	MLX4SIM_OP_OPEN		= 1,
	/* A write(2) of a uverbs command; the payload is what was written. */
	MLX4SIM_OP_WRITE	= 2,
	/* An mmap(2) of the page at page offset arg. */
	MLX4SIM_OP_MMAP		= 3,
	/* A read(2) of the event file arg, after its eventfd gave a token. */
	MLX4SIM_OP_EVENT	= 4,
};

struct mlx4sim_request {
	uint32_t op;		/* enum mlx4sim_op */
	uint32_t arg;
	/* followed by the payload */
};

/* The payload of an MMAP request: the rest of the mmap(2) call. */
struct mlx4sim_mmap {
	uint64_t length;
	uint32_t prot;
	uint32_t flags;
};

/* The payload of an EVENT request: the count read(2) was given. */
struct mlx4sim_event {
	uint32_t count;
};

struct mlx4sim_reply {
	/*
	 * OPEN: 0 or -errno.  WRITE: the byte count write(2) returns, or
	 * -errno.  MMAP: the page offset to map in the passed file, or
	 * -errno.  EVENT: the event's size (its bytes follow), 0 when the
	 * event the token stood for is gone, or -errno.
	 */
	int32_t ret;
	/* WRITE: bytes that follow, to be copied to the command's response. */
	uint32_t resp_len;
	/*
	 * When a descriptor comes with the reply: where, in the response,
	 * the kernel would have stored its number (a __u32), and the id of
	 * the event file it is, for later EVENT requests.  -1 otherwise.
	 */
	int32_t fd_offset;
	uint32_t event_file;
	/* followed by resp_len bytes */
};

#endif
