/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * difftrace-norm: an mlx4sim trace (mlx4sim --trace) made comparable
 * between two runs of the same programs, for difftrace.sh.
 *
 * What legitimately differs from run to run is named by its role instead
 * of erased: the processes become their program and role (server or
 * client), each with its lines together; QPNs, CQNs, SRQNs, PDNs and
 * memory keys become Q1, C1, S1, P1, K1... in the order they first
 * appear; addresses keep their offset in the page (A+0c0).  Everything
 * else -- opcodes, flags, sizes, counts, indexes, inline data, the order
 * of doorbells and WQEs -- is printed as it was.
 *
 * Field positions come from the installed mlx4 headers, the simulator's
 * own definition of the device.
 *
 * Usage: difftrace-norm < TRACE > NORMALIZED
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <endian.h>
#include <infiniband/mlx4dv.h>
#include <rdma/mlx4-abi.h>
#include <rdma/ib_user_verbs.h>

#define MAX_LINE	65536
#define MAX_PROCS	64
#define MAX_BYTES	4096
#define INVALID_LKEY	0x100
#define MIN(a, b)	((a) < (b) ? (a) : (b))	/* the key that ends a scatter list */

/* ------------------------------------------------------------------ */
/* Names by role                                                       */
/* ------------------------------------------------------------------ */

enum kind { QPN, CQN, SRQN, PDN, KEY, KINDS };
static const char kind_letter[KINDS] = { 'Q', 'C', 'S', 'P', 'K' };

static struct {
	uint32_t *value;
	size_t n, cap;
} names[KINDS];

static unsigned int name_of(enum kind k, uint32_t value)
{
	size_t i;

	for (i = 0; i < names[k].n; i++)
		if (names[k].value[i] == value)
			return i + 1;
	if (names[k].n == names[k].cap) {
		names[k].cap = names[k].cap ? 2 * names[k].cap : 64;
		names[k].value = realloc(names[k].value,
					 names[k].cap * sizeof(uint32_t));
		if (!names[k].value)
			abort();
	}
	names[k].value[names[k].n++] = value;
	return names[k].n;
}

/*
 * Memory regions, from REG_MR: an address in a WQE is shown as an offset
 * in the region its key names, which is what the program chose.
 */
struct region {
	uint32_t key;
	uint64_t start, length;
};
static struct region *regions;
static size_t nregions, regions_cap;

static void region_add(uint32_t lkey, uint32_t rkey, uint64_t start,
		       uint64_t length)
{
	uint32_t keys[2] = { lkey, rkey };

	for (int i = 0; i < 2 - (lkey == rkey); i++) {
		if (nregions == regions_cap) {
			regions_cap = regions_cap ? 2 * regions_cap : 64;
			regions = realloc(regions, regions_cap * sizeof(*regions));
			if (!regions)
				abort();
		}
		/* The newest registration of a key wins. */
		regions[nregions++] = (struct region){ keys[i], start, length };
	}
}

static const struct region *region_of(uint32_t key, uint64_t addr)
{
	for (size_t i = nregions; i-- > 0;)
		if (regions[i].key == key)
			return addr - regions[i].start < regions[i].length ||
			       (addr == regions[i].start) ? &regions[i] : NULL;
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Bytes with fields marked                                            */
/* ------------------------------------------------------------------ */

enum field { F_NONE, F_QPN24, F_CQN24, F_SRQN24, F_PDN24, F_QPN_HI,
	     F_SRQN_HI, F_NUM32, F_KEY, F_ADDR, F_DB, F_TIME };

struct bytes {
	uint8_t b[MAX_BYTES];
	uint8_t field[MAX_BYTES];	/* enum field at a field's first byte */
	uint8_t len[MAX_BYTES];		/* and its length */
	enum kind num_kind[MAX_BYTES];
	int8_t key_at[MAX_BYTES];	/* an address's key, from the address */
	size_t n;
};

static int parse_hex(const char *s, size_t chars, struct bytes *out)
{
	out->n = 0;
	if (chars % 2)
		return -1;
	for (size_t i = 0; i < chars && out->n < MAX_BYTES; i += 2) {
		unsigned int v;

		if (sscanf(s + i, "%2x", &v) != 1)
			return -1;
		out->field[out->n] = F_NONE;
		out->key_at[out->n] = 0;
		out->b[out->n++] = v;
	}
	return 0;
}

static void mark(struct bytes *b, size_t off, size_t len, enum field f)
{
	if (off + len <= b->n) {
		b->field[off] = f;
		b->len[off] = len;
	}
}

/* An address at @off whose key is at @key: shown inside the key's region. */
static void mark_addr(struct bytes *b, size_t off, size_t key)
{
	mark(b, off, 8, F_ADDR);
	if (off + 8 <= b->n && key + 4 <= b->n)
		b->key_at[off] = (int8_t)(key - off);
}

static void mark_num(struct bytes *b, size_t off, enum kind k)
{
	mark(b, off, 4, F_NUM32);
	if (off + 4 <= b->n)
		b->num_kind[off] = k;
}

static uint32_t be32_at(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

static uint64_t be64_at(const uint8_t *p)
{
	return (uint64_t)be32_at(p) << 32 | be32_at(p + 4);
}

static uint32_t le32_at(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64_at(const uint8_t *p)
{
	return le32_at(p) | (uint64_t)le32_at(p + 4) << 32;
}

/*
 * Print @b: plain bytes in hex, fields as their names.  Big-endian
 * fields (the device's) unless @little (the driver data of commands).
 */
static void print_bytes(const struct bytes *b, bool little)
{
	static const enum kind of24[] = {
		[F_QPN24] = QPN, [F_CQN24] = CQN, [F_SRQN24] = SRQN,
		[F_PDN24] = PDN, [F_QPN_HI] = QPN, [F_SRQN_HI] = SRQN,
	};

	for (size_t i = 0; i < b->n;) {
		size_t len = b->len[i];
		uint32_t v;
		uint64_t a;

		switch (b->field[i]) {
		case F_QPN24:
		case F_CQN24:
		case F_SRQN24:
		case F_PDN24:
			/* The low 24 bits of a big-endian word: byte 0 stays. */
			v = be32_at(b->b + i) & 0xffffff;
			printf("%02x", b->b[i]);
			if (v)
				printf("<%c%u>", kind_letter[of24[b->field[i]]],
				       name_of(of24[b->field[i]], v));
			else
				printf("000000");
			break;
		case F_QPN_HI:
		case F_SRQN_HI:
			/* The high 24 bits of a big-endian word: byte 3 stays. */
			v = be32_at(b->b + i) >> 8;
			if (v)
				printf("<%c%u>%02x", kind_letter[of24[b->field[i]]],
				       name_of(of24[b->field[i]], v), b->b[i + 3]);
			else
				printf("%08x", be32_at(b->b + i));
			break;
		case F_NUM32:
			v = little ? le32_at(b->b + i) : be32_at(b->b + i);
			printf("<%c%u>", kind_letter[b->num_kind[i]],
			       name_of(b->num_kind[i], v));
			break;
		case F_KEY:
			v = be32_at(b->b + i);
			if (v == INVALID_LKEY || v == 0)
				printf("%08x", v);
			else
				printf("<K%u>", name_of(KEY, v));
			break;
		case F_ADDR:
			a = little ? le64_at(b->b + i) : be64_at(b->b + i);
			if (b->key_at[i]) {
				uint32_t key = be32_at(b->b + i + b->key_at[i]);
				const struct region *r = region_of(key, a);

				if (r) {
					printf("<@K%u+0x%llx>", name_of(KEY, key),
					       (unsigned long long)(a - r->start));
					break;
				}
			}
			if (a)
				printf("<A+%03llx>",
				       (unsigned long long)(a & 0xfff));
			else
				printf("%016x", 0);
			break;
		case F_DB:
			/* Where a driver keeps its doorbell records is its own affair. */
			printf("<DB>");
			break;
		case F_TIME:
			printf("<time>");
			break;
		default:
			printf("%02x", b->b[i]);
			len = 1;
		}
		i += len;
	}
}

/* ------------------------------------------------------------------ */
/* WQEs                                                                */
/* ------------------------------------------------------------------ */

static void mark_segment(const char *name, struct bytes *b)
{
	if (!strcmp(name, "ctrl")) {
		/* The QPN a BlueFlame write carries, above the size byte. */
		mark(b, offsetof(struct mlx4_wqe_ctrl_seg, bf_qpn), 4, F_QPN_HI);
		/* An XRC send's target SRQN, above the flags. */
		mark(b, offsetof(struct mlx4_wqe_ctrl_seg, srcrb_flags), 4,
		     F_SRQN_HI);
	} else if (!strcmp(name, "raddr")) {
		mark_addr(b, offsetof(struct mlx4_wqe_raddr_seg, raddr),
			  offsetof(struct mlx4_wqe_raddr_seg, rkey));
		mark(b, offsetof(struct mlx4_wqe_raddr_seg, rkey), 4, F_KEY);
	} else if (!strcmp(name, "data")) {
		mark(b, offsetof(struct mlx4_wqe_data_seg, lkey), 4, F_KEY);
		mark_addr(b, offsetof(struct mlx4_wqe_data_seg, addr),
			  offsetof(struct mlx4_wqe_data_seg, lkey));
	} else if (!strcmp(name, "bind") &&
		   b->n >= sizeof(struct mlx4_wqe_bind_seg)) {
		/* A window: its key now names the range it was bound to. */
		uint32_t rkey = be32_at(b->b +
			offsetof(struct mlx4_wqe_bind_seg, new_rkey));

		region_add(rkey, rkey,
			   be64_at(b->b + offsetof(struct mlx4_wqe_bind_seg, addr)),
			   be64_at(b->b + offsetof(struct mlx4_wqe_bind_seg, length)));
		mark(b, offsetof(struct mlx4_wqe_bind_seg, new_rkey), 4, F_KEY);
		mark(b, offsetof(struct mlx4_wqe_bind_seg, lkey), 4, F_KEY);
		mark_addr(b, offsetof(struct mlx4_wqe_bind_seg, addr),
			  offsetof(struct mlx4_wqe_bind_seg, lkey));
	} else if (!strcmp(name, "inval")) {
		mark(b, offsetof(struct mlx4_wqe_local_inval_seg, mem_key), 4,
		     F_KEY);
	} else if (!strcmp(name, "dgram")) {
		mark(b, offsetof(struct mlx4_wqe_datagram_seg, av.port_pd), 4,
		     F_PDN24);
		mark(b, offsetof(struct mlx4_wqe_datagram_seg, dqpn), 4,
		     F_QPN24);
	}
	printf("%s:", name);
	print_bytes(b, false);
}

/* "name:hex,name:hex..." */
static void print_wqe(const char *segs)
{
	static struct bytes b;
	bool first = true;

	while (*segs && *segs != ' ' && *segs != '\n') {
		const char *colon = strchr(segs, ':');
		size_t chars;
		char name[16];

		if (!colon || colon - segs >= (long)sizeof(name))
			break;
		memcpy(name, segs, colon - segs);
		name[colon - segs] = 0;
		chars = strcspn(colon + 1, ", \n");
		if (parse_hex(colon + 1, chars, &b))
			break;
		printf("%s", first ? "" : ",");
		first = false;
		mark_segment(name, &b);
		segs = colon + 1 + chars;
		if (*segs == ',')
			segs++;
	}
}

/* ------------------------------------------------------------------ */
/* Lines                                                               */
/* ------------------------------------------------------------------ */

/* The driver data of the commands that carry numbers or addresses. */
static void mark_driver_data(const char *cmd, struct bytes *in,
			     struct bytes *out)
{
	if (!strcmp(cmd, "CREATE_CQ") || !strcmp(cmd, "EX_CREATE_CQ")) {
		mark(in, offsetof(struct mlx4_ib_create_cq, buf_addr), 8, F_ADDR);
		mark(in, offsetof(struct mlx4_ib_create_cq, db_addr), 8, F_DB);
		mark_num(out, offsetof(struct mlx4_ib_create_cq_resp, cqn), CQN);
	} else if (!strcmp(cmd, "RESIZE_CQ")) {
		mark(in, offsetof(struct mlx4_ib_resize_cq, buf_addr), 8, F_ADDR);
	} else if (!strcmp(cmd, "CREATE_QP") || !strcmp(cmd, "EX_CREATE_QP")) {
		mark(in, offsetof(struct mlx4_ib_create_qp, buf_addr), 8, F_ADDR);
		mark(in, offsetof(struct mlx4_ib_create_qp, db_addr), 8, F_DB);
	} else if (!strcmp(cmd, "EX_CREATE_WQ")) {
		mark(in, offsetof(struct mlx4_ib_create_wq, buf_addr), 8, F_ADDR);
		mark(in, offsetof(struct mlx4_ib_create_wq, db_addr), 8, F_DB);
	} else if (!strcmp(cmd, "CREATE_SRQ") || !strcmp(cmd, "CREATE_XSRQ")) {
		mark(in, offsetof(struct mlx4_ib_create_srq, buf_addr), 8, F_ADDR);
		mark(in, offsetof(struct mlx4_ib_create_srq, db_addr), 8, F_DB);
		mark_num(out, offsetof(struct mlx4_ib_create_srq_resp, srqn),
			 SRQN);
	} else if (!strcmp(cmd, "ALLOC_PD")) {
		mark_num(out, offsetof(struct mlx4_ib_alloc_pd_resp, pdn), PDN);
	}
}

/* The hex of field @name= in @line into @b; -1 if absent or bad. */
static int field_hex(const char *line, const char *name, struct bytes *b)
{
	char key[32];
	const char *p;

	snprintf(key, sizeof(key), " %s=", name);
	p = strstr(line, key);
	if (!p)
		return -1;
	p += strlen(key);
	return parse_hex(p, strcspn(p, " \n"), b);
}

/* A region registered: its keys and addresses, for the WQEs that use it. */
static void note_region(const struct bytes *in, const struct bytes *out)
{
	if (in->n < sizeof(struct ib_uverbs_reg_mr) ||
	    out->n < sizeof(struct ib_uverbs_reg_mr_resp))
		return;
	region_add(le32_at(out->b + offsetof(struct ib_uverbs_reg_mr_resp, lkey)),
		   le32_at(out->b + offsetof(struct ib_uverbs_reg_mr_resp, rkey)),
		   le64_at(in->b + offsetof(struct ib_uverbs_reg_mr, hca_va)),
		   le64_at(in->b + offsetof(struct ib_uverbs_reg_mr, length)));
}

/*
 * The name, sizes, return value and driver data; the core's part is
 * libibverbs' (the same for every provider), full of pointers, and only
 * read for what it says about regions.
 */
static void print_command(const char *rest)
{
	static struct bytes in, out, core_in, core_out;
	const char *core = strstr(rest, " core_in=");
	char name[64];

	if (sscanf(rest, "%63s", name) != 1 || !core ||
	    field_hex(rest, "drv_in", &in) || field_hex(rest, "drv_out", &out)) {
		fputs(rest, stdout);
		return;
	}
	if (!strcmp(name, "REG_MR") && !field_hex(rest, "core_in", &core_in) &&
	    !field_hex(rest, "core_out", &core_out))
		note_region(&core_in, &core_out);
	mark_driver_data(name, &in, &out);
	fwrite(rest, 1, core - rest, stdout);
	printf(" drv_in=");
	print_bytes(&in, true);
	printf(" drv_out=");
	print_bytes(&out, true);
	putchar('\n');
}

static void print_cqe(const char *rest)
{
	static struct bytes b;
	bool ts = !strncmp(rest, "ts ", 3);

	if (ts)
		rest += 3;
	if (parse_hex(rest, strcspn(rest, " \n"), &b) ||
	    b.n != sizeof(struct mlx4_cqe)) {
		fputs(rest, stdout);
		return;
	}
	mark(&b, offsetof(struct mlx4_cqe, vlan_my_qpn), 4, F_QPN24);
	mark(&b, offsetof(struct mlx4_cqe, g_mlpath_rqpn), 4, F_QPN24);
	if (ts) {
		mark(&b, offsetof(struct mlx4_cqe, ts_47_16), 4, F_TIME);
		mark(&b, offsetof(struct mlx4_cqe, ts_15_8), 2, F_TIME);
	}
	print_bytes(&b, false);
	putchar('\n');
}

/* One line of the trace, its process prefix gone. */
static void print_line(const char *line)
{
	unsigned int num, word0, word1, index;
	char verb[16];
	int used = 0;

	if (sscanf(line, "%15s%n", verb, &used) != 1)
		return;
	line += used;
	if (*line == ' ')
		line++;
	printf("%s%s", verb, *line && *line != '\n' ? " " : "");
	if (!strcmp(verb, "cmd")) {
		print_command(line);
	} else if (!strcmp(verb, "open")) {
		/* The device, not the command line (ports differ). */
		printf("%.*s\n", (int)strcspn(line, " \n"), line);
	} else if (sscanf(line, "uar send=0x%x", &word0) == 1) {
		printf("uar send=<Q%u>%02x\n", name_of(QPN, word0 >> 8),
		       word0 & 0xff);
	} else if (sscanf(line, "uar cq=0x%x,0x%x", &word0, &word1) == 2) {
		printf("uar cq=%02x<C%u>,%08x\n", word0 >> 24,
		       name_of(CQN, word0 & 0xffffff), word1);
	} else if (!strcmp(verb, "bf") &&
		   sscanf(line, "uar+0x%x wqe=%n", &num, &used) == 1) {
		printf("uar+0x%x wqe=", num);
		print_wqe(line + used);
		putchar('\n');
	} else if ((!strcmp(verb, "sq") || !strcmp(verb, "rq")) &&
		   sscanf(line, "qp=0x%x i=%u wqe=%n", &num, &index, &used) == 2) {
		printf("qp=<Q%u> i=%u wqe=", name_of(QPN, num), index);
		print_wqe(line + used);
		putchar('\n');
	} else if (!strcmp(verb, "srq") &&
		   sscanf(line, "srq=0x%x i=%u wqe=%n", &num, &index, &used) == 2) {
		printf("srq=<S%u> i=%u wqe=", name_of(SRQN, num), index);
		print_wqe(line + used);
		putchar('\n');
	} else if (!strcmp(verb, "cqe") &&
		   sscanf(line, "cq=0x%x i=%u %n", &num, &index, &used) == 2) {
		printf("cq=<C%u> i=%u ", name_of(CQN, num), index);
		print_cqe(line + used);
	} else {
		fputs(line, stdout);
	}
}

/* ------------------------------------------------------------------ */
/* Processes                                                           */
/* ------------------------------------------------------------------ */

struct proc {
	int pid;
	char role[128];
	char **lines;
	size_t n, cap;
	size_t first;			/* where it first appeared */
};

static struct proc procs[MAX_PROCS];
static size_t nprocs;

static struct proc *proc_of(int pid, size_t lineno)
{
	for (size_t i = 0; i < nprocs; i++)
		if (procs[i].pid == pid)
			return &procs[i];
	if (nprocs == MAX_PROCS) {
		fprintf(stderr, "difftrace-norm: more than %d processes\n",
			MAX_PROCS);
		exit(2);
	}
	procs[nprocs].pid = pid;
	procs[nprocs].first = lineno;
	snprintf(procs[nprocs].role, sizeof(procs[nprocs].role), "unknown");
	return &procs[nprocs++];
}

/*
 * A process's role: its program, and "client" when it was given a
 * server to reach (its last argument is "localhost"), else "server".
 */
static void set_role(struct proc *p, const char *argv)
{
	size_t len = strcspn(argv, "\n");
	const char *end = argv + len, *last = end, *base = argv;

	for (const char *c = argv; c < end && *c != ' '; c++)
		if (*c == '/')
			base = c + 1;
	while (last > argv && last[-1] != ' ')
		last--;
	snprintf(p->role, sizeof(p->role), "%.*s %s",
		 (int)MIN(strcspn(base, " \n"), 64), base,
		 end - last == 9 && !strncmp(last, "localhost", 9) ?
		 "client" : "server");
}

/* The QP and WQE index a send WQE line is about: sq, or bf. */
static bool wqe_of(const char *line, unsigned int *qpn, unsigned int *index)
{
	unsigned int owner, word1;

	if (sscanf(line, "sq qp=0x%x i=%u", qpn, index) == 2) {
		*index &= 0xffff;
		return true;
	}
	/* A BlueFlame copy names them in its control segment. */
	if (sscanf(line, "bf uar+0x%*x wqe=ctrl:%8x%8x", &owner, &word1) == 2) {
		*qpn = word1 >> 8;
		*index = (owner >> 8) & 0xffff;
		return true;
	}
	return false;
}

#define BF_WINDOW	256

/* The WQE bytes of a sq or bf line, up to the end of the line. */
static const char *wqe_bytes(const char *line)
{
	const char *p = strstr(line, " wqe=");

	return p ? p + 5 : "";
}

/*
 * The device sees doorbells as memory it looks at now and then, not as
 * writes: two rings of one register between two looks are one, a WQE
 * may run before its own doorbell is taken (the device was already
 * reading the queue), and a BlueFlame half may be written twice before
 * the device looks.  So neither send doorbells nor BlueFlame writes are
 * compared as events.  What the driver decided is in the ring all the
 * same: a WQE it handed over by BlueFlame carries its QPN and index in
 * its control segment.  A BlueFlame copy the device did see must hold
 * the same bytes as the WQE in the ring; one that does not is printed.
 */
static void print_proc(const struct proc *p)
{
	const char *last = "";

	for (size_t j = 0; j < p->n; j++) {
		const char *line = p->lines[j];
		unsigned int qpn, index, q, x;

		if (!strncmp(line, "db uar send=", 12))
			continue;
		/*
		 * The device reads a send WQE again each time it retries it
		 * (after an RNR NAK): how often is when the peer posted its
		 * receive, timing, not the driver.  One line for the run.
		 */
		if (!strncmp(line, "sq ", 3) && !strcmp(line, last))
			continue;
		last = line;
		if (strncmp(line, "bf ", 3)) {
			print_line(line);
			continue;
		}
		if (!wqe_of(line, &qpn, &index))
			continue;
		for (size_t d = 1; d < BF_WINDOW; d++) {
			size_t k[2] = { j + d, j - d };
			int w;

			for (w = 0; w < 2; w++)
				if (k[w] < p->n && !strncmp(p->lines[k[w]], "sq ", 3) &&
				    wqe_of(p->lines[k[w]], &q, &x) &&
				    q == qpn && x == index)
					break;
			if (w == 2)
				continue;
			if (strcmp(wqe_bytes(line), wqe_bytes(p->lines[k[w]]))) {
				printf("BlueFlame copy unlike the ring's: ");
				print_line(line);
			}
			break;
		}
	}
}

static int by_role(const void *a, const void *b)
{
	const struct proc *x = a, *y = b;
	int c = strcmp(x->role, y->role);

	if (c)
		return -c;		/* servers before clients */
	return x->first < y->first ? -1 : x->first > y->first;
}

int main(void)
{
	static char line[MAX_LINE];
	size_t lineno = 0;

	while (fgets(line, sizeof(line), stdin)) {
		struct proc *p;
		int pid, used;
		char *arg;

		if (sscanf(line, "p%d %n", &pid, &used) != 1)
			continue;
		p = proc_of(pid, lineno++);
		arg = strstr(line, " cmd=");
		if (!strncmp(line + used, "open ", 5) && arg)
			set_role(p, arg + 5);
		if (p->n == p->cap) {
			p->cap = p->cap ? 2 * p->cap : 256;
			p->lines = realloc(p->lines, p->cap * sizeof(char *));
			if (!p->lines)
				abort();
		}
		p->lines[p->n++] = strdup(line + used);
	}
	qsort(procs, nprocs, sizeof(procs[0]), by_role);
	for (size_t i = 0; i < nprocs; i++) {
		printf("== %s\n", procs[i].role);
		print_proc(&procs[i]);
	}
	return 0;
}
