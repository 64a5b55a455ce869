/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An MPI program that checks every byte it moves: each rank with its
 * partner (rank ^ 1) sends and receives, puts and gets messages from 1
 * byte to 4 MiB, both ways, and all ranks reduce their counts at the end.
 * Built by tests/verbs/mpi.sh with the MPI implementation's own mpicc (it
 * is not part of the build: MPI is optional).  Prints one line of counts;
 * exits 1 on the first wrong byte, naming it.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZE	(4 << 20)

static int rank, partner;

/* The byte at @i of a message of @size from @src in step @step. */
static uint8_t pattern(size_t i, size_t size, int src, int step)
{
	return (uint8_t)(i * 131 + size * 7 + src * 29 + step * 53 + 1);
}

static void fill(uint8_t *buf, size_t size, int src, int step)
{
	for (size_t i = 0; i < size; i++)
		buf[i] = pattern(i, size, src, step);
}

static void verify(const uint8_t *buf, size_t size, int src, int step,
		   const char *what)
{
	for (size_t i = 0; i < size; i++) {
		if (buf[i] != pattern(i, size, src, step)) {
			printf("rank %d: %s of %zu bytes from rank %d: byte %zu is 0x%02x, not 0x%02x\n",
			       rank, what, size, src, i, buf[i],
			       pattern(i, size, src, step));
			fflush(stdout);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
}

/* Each of the pair sends to the other, then the other way. */
static void send_recv(uint8_t *out, uint8_t *in, size_t size, int step)
{
	for (int turn = 0; turn < 2; turn++) {
		int sender = (rank & 1) == turn;

		if (sender) {
			fill(out, size, rank, step);
			MPI_Send(out, (int)size, MPI_BYTE, partner, step,
				 MPI_COMM_WORLD);
		} else {
			memset(in, 0, size);
			MPI_Recv(in, (int)size, MPI_BYTE, partner, step,
				 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			verify(in, size, partner, step, "a receive");
		}
	}
}

/* A put into the partner's window, then a get of what it put in ours. */
static void put_get(MPI_Win win, uint8_t *window, uint8_t *buf, size_t size,
		    int step)
{
	fill(buf, size, rank, step);
	MPI_Win_fence(0, win);
	MPI_Put(buf, (int)size, MPI_BYTE, partner, 0, (int)size, MPI_BYTE, win);
	MPI_Win_fence(0, win);
	verify(window, size, partner, step, "a put");

	fill(window, size, rank, step + 1);
	memset(buf, 0, size);
	MPI_Win_fence(0, win);
	MPI_Get(buf, (int)size, MPI_BYTE, partner, 0, (int)size, MPI_BYTE, win);
	MPI_Win_fence(0, win);
	verify(buf, size, partner, step + 1, "a get");
}

/*
 * Where each rank ran, one line a rank from rank 0 (a run on several
 * hosts checks that each rank had a host of its own).
 */
static void report_hosts(int rank, int ranks)
{
	char name[MPI_MAX_PROCESSOR_NAME] = "", *all = NULL;
	int len;

	MPI_Get_processor_name(name, &len);
	if (!rank)
		all = calloc(ranks, MPI_MAX_PROCESSOR_NAME);
	MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all,
		   MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
	for (int r = 0; all && r < ranks; r++)
		printf("mpi-check: rank %d on %s\n", r,
		       all + (size_t)r * MPI_MAX_PROCESSOR_NAME);
	free(all);
}

int main(int argc, char **argv)
{
	uint8_t *out, *in, *window;
	long checks = 0, all = 0;
	int ranks, step = 0;
	MPI_Win win;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &ranks);
	if (ranks % 2) {
		if (!rank)
			printf("mpi-check: an even number of ranks, please\n");
		MPI_Finalize();
		return 2;
	}
	partner = rank ^ 1;
	out = malloc(MAX_SIZE);
	in = malloc(MAX_SIZE);
	MPI_Alloc_mem(MAX_SIZE, MPI_INFO_NULL, &window);
	if (!out || !in || !window)
		MPI_Abort(MPI_COMM_WORLD, 1);
	MPI_Win_create(window, MAX_SIZE, 1, MPI_INFO_NULL, MPI_COMM_WORLD,
		       &win);

	/* Powers of two, and a size beside each that is not one. */
	for (size_t size = 1; size <= MAX_SIZE; size *= 2) {
		size_t odd = size * 3 / 2 + 1;

		send_recv(out, in, size, step++);
		put_get(win, window, out, size, step);
		step += 2;
		checks += 3;
		if (odd <= MAX_SIZE) {
			send_recv(out, in, odd, step++);
			checks++;
		}
	}

	MPI_Win_free(&win);
	MPI_Reduce(&checks, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	report_hosts(rank, ranks);
	if (!rank)
		printf("mpi-check: %d ranks, %ld transfers checked byte by byte\n",
		       ranks, all);
	MPI_Free_mem(window);
	free(out);
	free(in);
	MPI_Finalize();
	return 0;
}
