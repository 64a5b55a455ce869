/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * difftrace-norm: an mlx4sim trace (mlx4sim --trace) made comparable
 * between two runs of the same programs, for difftrace.tap.
 *
 * What legitimately differs from run to run is named by its role instead
 * of erased: the processes become their program and role (server or
 * client), servers first, each with its lines together; QPNs, CQNs,
 * SRQNs, PDNs and memory keys become Q1, C1, S1, P1, K1... in the order
 * they are first printed (a QP, CQ, SRQ or PD is named by the command
 * that created it); addresses keep their offset in the page (A+0c0), or
 * in the memory region their key names (@K2+0x40).
 *
 * What is compared is what the driver decides, in the order it decides
 * it.  For each process, first its commands (open, cmd, close) in its
 * order; then the device's work on each of its queues: a QP's send WQEs
 * as the device read them, a QP's and an SRQ's receive WQEs as it took
 * them, a CQ's CQEs as it wrote them, a CQ's arm doorbells; each queue's
 * lines in their order, the queues by kind and then by name.  The order
 * between two queues, or between a queue and the commands, is not
 * compared: the device does not keep one (it runs independent queues
 * independently, when it gets to them), a driver cannot observe one, and
 * in a trace it is timing, different from run to run.  (A CQ that several
 * queues complete to has their completions in the order they finished,
 * so the corpus keeps to programs in which that order is not timing.)
 * Send doorbells and BlueFlame writes are not compared as events (see
 * stream_of()); a BlueFlame copy unlike the WQE in the ring is.
 * Everything else -- opcodes, flags, sizes, counts, indexes, inline data
 * -- is printed as it was.
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
#include <ctype.h>
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
#define INVALID_LKEY	0x100	/* the key that ends a scatter list */
#define MIN(a, b)	((a) < (b) ? (a) : (b))

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

/* @value's name if it has one yet, else 0; names nothing. */
static unsigned int name_known(enum kind k, uint32_t value)
{
	for (size_t i = 0; i < names[k].n; i++)
		if (names[k].value[i] == value)
			return i + 1;
	return 0;
}

/*
 * Lines are rendered in the order of the trace (the regions an address
 * falls in are those of that moment) but printed in another order, and a
 * name is given where a number is first printed.  So a rendered line
 * holds a number as a reference, NAME_REF, its kind's letter and eight
 * hex digits; emit() turns it into the name.  NAME_NOTE names a number
 * without printing it: a command that creates an object names it.
 */
#define NAME_REF	'\001'
#define NAME_NOTE	'\002'

static FILE *out;	/* where lines are rendered */

static void put_ref(enum kind k, uint32_t value)
{
	fprintf(out, "%c%c%08x", NAME_REF, kind_letter[k], value);
}

/* <Q1>, <C2>...: a number's name in brackets. */
static void put_name(enum kind k, uint32_t value)
{
	fputc('<', out);
	put_ref(k, value);
	fputc('>', out);
}

static void note_name(enum kind k, uint32_t value)
{
	fprintf(out, "%c%c%08x", NAME_NOTE, kind_letter[k], value);
}

/* Print a rendered line, its references named. */
static void emit(const char *s)
{
	for (; *s; s++) {
		const char *letter;
		unsigned int v;
		enum kind k;

		if ((*s != NAME_REF && *s != NAME_NOTE) || !s[1] ||
		    !(letter = memchr(kind_letter, s[1], KINDS)) ||
		    sscanf(s + 2, "%8x", &v) != 1) {
			putchar(*s);
			continue;
		}
		k = letter - kind_letter;
		if (*s == NAME_REF)
			printf("%c%u", kind_letter[k], name_of(k, v));
		else
			name_of(k, v);
		s += 9;
	}
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

static int parse_hex(const char *s, size_t chars, struct bytes *bytes)
{
	bytes->n = 0;
	if (chars % 2)
		return -1;
	for (size_t i = 0; i < chars && bytes->n < MAX_BYTES; i += 2) {
		unsigned int v;

		if (sscanf(s + i, "%2x", &v) != 1)
			return -1;
		bytes->field[bytes->n] = F_NONE;
		bytes->key_at[bytes->n] = 0;
		bytes->b[bytes->n++] = v;
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
			fprintf(out, "%02x", b->b[i]);
			if (v)
				put_name(of24[b->field[i]], v);
			else
				fprintf(out, "000000");
			break;
		case F_QPN_HI:
		case F_SRQN_HI:
			/* The high 24 bits of a big-endian word: byte 3 stays. */
			v = be32_at(b->b + i) >> 8;
			if (v) {
				put_name(of24[b->field[i]], v);
				fprintf(out, "%02x", b->b[i + 3]);
			} else {
				fprintf(out, "%08x", be32_at(b->b + i));
			}
			break;
		case F_NUM32:
			v = little ? le32_at(b->b + i) : be32_at(b->b + i);
			put_name(b->num_kind[i], v);
			break;
		case F_KEY:
			v = be32_at(b->b + i);
			if (v == INVALID_LKEY || v == 0)
				fprintf(out, "%08x", v);
			else
				put_name(KEY, v);
			break;
		case F_ADDR:
			a = little ? le64_at(b->b + i) : be64_at(b->b + i);
			if (b->key_at[i]) {
				uint32_t key = be32_at(b->b + i + b->key_at[i]);
				const struct region *r = region_of(key, a);

				if (r) {
					fprintf(out, "<@");
					put_ref(KEY, key);
					fprintf(out, "+0x%llx>",
						(unsigned long long)(a - r->start));
					break;
				}
			}
			if (a)
				fprintf(out, "<A+%03llx>",
				       (unsigned long long)(a & 0xfff));
			else
				fprintf(out, "%016x", 0);
			break;
		case F_DB:
			/* Where a driver keeps its doorbell records is its own affair. */
			fprintf(out, "<DB>");
			break;
		case F_TIME:
			fprintf(out, "<time>");
			break;
		default:
			fprintf(out, "%02x", b->b[i]);
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
	fprintf(out, "%s:", name);
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
		fprintf(out, "%s", first ? "" : ",");
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
			     struct bytes *drv_out)
{
	if (!strcmp(cmd, "CREATE_CQ") || !strcmp(cmd, "EX_CREATE_CQ")) {
		mark(in, offsetof(struct mlx4_ib_create_cq, buf_addr), 8, F_ADDR);
		mark(in, offsetof(struct mlx4_ib_create_cq, db_addr), 8, F_DB);
		mark_num(drv_out, offsetof(struct mlx4_ib_create_cq_resp, cqn), CQN);
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
		mark_num(drv_out, offsetof(struct mlx4_ib_create_srq_resp, srqn),
			 SRQN);
	} else if (!strcmp(cmd, "ALLOC_PD")) {
		mark_num(drv_out, offsetof(struct mlx4_ib_alloc_pd_resp, pdn), PDN);
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
static void note_region(const struct bytes *in, const struct bytes *resp)
{
	if (in->n < sizeof(struct ib_uverbs_reg_mr) ||
	    resp->n < sizeof(struct ib_uverbs_reg_mr_resp))
		return;
	region_add(le32_at(resp->b + offsetof(struct ib_uverbs_reg_mr_resp, lkey)),
		   le32_at(resp->b + offsetof(struct ib_uverbs_reg_mr_resp, rkey)),
		   le64_at(in->b + offsetof(struct ib_uverbs_reg_mr, hca_va)),
		   le64_at(in->b + offsetof(struct ib_uverbs_reg_mr, length)));
}

/*
 * What the core's part of a command says that WQEs use: a region's keys
 * and addresses, and a QP's number (from the command that created it,
 * which names it, whatever order the device then touches queues in).
 */
static void note_core(const char *cmd, const struct bytes *in,
		      const struct bytes *resp)
{
	size_t qpn = offsetof(struct ib_uverbs_create_qp_resp, qpn);
	size_t wqn = offsetof(struct ib_uverbs_ex_create_wq_resp, wqn);

	if (!strcmp(cmd, "REG_MR"))
		note_region(in, resp);
	else if ((!strcmp(cmd, "CREATE_QP") || !strcmp(cmd, "EX_CREATE_QP") ||
		  !strcmp(cmd, "OPEN_QP")) && resp->n >= qpn + 4)
		note_name(QPN, le32_at(resp->b + qpn));
	else if (!strcmp(cmd, "EX_CREATE_WQ") && resp->n >= wqn + 4)
		note_name(QPN, le32_at(resp->b + wqn));
}

/*
 * The name, sizes, return value and driver data; the core's part is
 * libibverbs' (the same for every provider), full of pointers, and only
 * read for what it says about regions.
 */
static void print_command(const char *rest)
{
	static struct bytes in, drv_out, core_in, core_out;
	const char *core = strstr(rest, " core_in=");
	char name[64];

	if (sscanf(rest, "%63s", name) != 1 || !core ||
	    field_hex(rest, "drv_in", &in) || field_hex(rest, "drv_out", &drv_out)) {
		fputs(rest, out);
		return;
	}
	if (!field_hex(rest, "core_in", &core_in) &&
	    !field_hex(rest, "core_out", &core_out))
		note_core(name, &core_in, &core_out);
	mark_driver_data(name, &in, &drv_out);
	fwrite(rest, 1, core - rest, out);
	fprintf(out, " drv_in=");
	print_bytes(&in, true);
	fprintf(out, " drv_out=");
	print_bytes(&drv_out, true);
	fputc('\n', out);
}

static void print_cqe(const char *rest)
{
	static struct bytes b;
	bool ts = !strncmp(rest, "ts ", 3);

	if (ts)
		rest += 3;
	if (parse_hex(rest, strcspn(rest, " \n"), &b) ||
	    b.n != sizeof(struct mlx4_cqe)) {
		fputs(rest, out);
		return;
	}
	mark(&b, offsetof(struct mlx4_cqe, vlan_my_qpn), 4, F_QPN24);
	mark(&b, offsetof(struct mlx4_cqe, g_mlpath_rqpn), 4, F_QPN24);
	if (ts) {
		mark(&b, offsetof(struct mlx4_cqe, ts_47_16), 4, F_TIME);
		mark(&b, offsetof(struct mlx4_cqe, ts_15_8), 2, F_TIME);
	}
	print_bytes(&b, false);
	fputc('\n', out);
}

/* One line of the trace, its process prefix gone. */
static void print_line(const char *line)
{
	unsigned int num, word0, word1, index;
	char verb[16], verdict[16];
	int used = 0;

	if (sscanf(line, "%15s%n", verb, &used) != 1)
		return;
	line += used;
	if (*line == ' ')
		line++;
	fprintf(out, "%s%s", verb, *line && *line != '\n' ? " " : "");
	if (!strcmp(verb, "cmd")) {
		print_command(line);
	} else if (!strcmp(verb, "open")) {
		/* The device, not the command line (ports differ). */
		fprintf(out, "%.*s\n", (int)strcspn(line, " \n"), line);
	} else if (sscanf(line, "uar send=0x%x", &word0) == 1) {
		fprintf(out, "uar send=");
		put_name(QPN, word0 >> 8);
		fprintf(out, "%02x\n", word0 & 0xff);
	} else if (sscanf(line, "uar cq=0x%x,0x%x", &word0, &word1) == 2) {
		fprintf(out, "uar cq=%02x", word0 >> 24);
		put_name(CQN, word0 & 0xffffff);
		fprintf(out, ",%08x\n", word1);
	} else if (!strcmp(verb, "bf") &&
		   sscanf(line, "uar+0x%x %15s wqe=%n", &num, verdict,
			  &used) == 2) {
		fprintf(out, "uar+0x%x %s wqe=", num, verdict);
		print_wqe(line + used);
		fputc('\n', out);
	} else if ((!strcmp(verb, "sq") || !strcmp(verb, "rq")) &&
		   sscanf(line, "qp=0x%x i=%u wqe=%n", &num, &index, &used) == 2) {
		fprintf(out, "qp=");
		put_name(QPN, num);
		fprintf(out, " i=%u wqe=", index);
		print_wqe(line + used);
		fputc('\n', out);
	} else if (!strcmp(verb, "srq") &&
		   sscanf(line, "srq=0x%x i=%u wqe=%n", &num, &index, &used) == 2) {
		fprintf(out, "srq=");
		put_name(SRQN, num);
		fprintf(out, " i=%u wqe=", index);
		print_wqe(line + used);
		fputc('\n', out);
	} else if (!strcmp(verb, "cqe") &&
		   sscanf(line, "cq=0x%x i=%u %n", &num, &index, &used) == 2) {
		fprintf(out, "cq=");
		put_name(CQN, num);
		fprintf(out, " i=%u ", index);
		print_cqe(line + used);
	} else {
		fputs(line, out);
	}
}

/* @line rendered, after @prefix, as a string of its own. */
static char *render(const char *prefix, const char *line)
{
	char *text;
	size_t size;

	out = open_memstream(&text, &size);
	if (!out)
		abort();
	fputs(prefix, out);
	print_line(line);
	if (fclose(out))
		abort();
	out = NULL;
	return text;
}

/* ------------------------------------------------------------------ */
/* Processes                                                           */
/* ------------------------------------------------------------------ */


/*
 * What a line of a process is about.  The driver's commands (open, cmd,
 * close) are one stream, in the driver's order.  The device's work is a
 * stream per queue: a QP's send WQE reads, its receive WQE takes, an
 * SRQ's takes, a CQ's CQE writes; and a CQ's arm doorbells, which the
 * driver writes but the device reads in its own time.  Each stream keeps
 * its order, which is the queue's; between streams there is no order the
 * device keeps or a driver could see (two queues run independently, and a
 * CQE is written whenever the device gets to it), so none is compared.
 * ST_BF is a BlueFlame copy the simulator found unlike the ring's WQE
 * (sim/adapter/doorbell.c).
 */
enum stream { ST_CMD, ST_SQ, ST_BF, ST_RQ, ST_SRQ, ST_CQE, ST_ARM, ST_NONE };

static const enum kind stream_object[] = {
	[ST_SQ] = QPN, [ST_BF] = QPN, [ST_RQ] = QPN, [ST_SRQ] = SRQN,
	[ST_CQE] = CQN, [ST_ARM] = CQN,
};

struct line {
	char *raw;			/* as traced, its process prefix gone */
	char *text;			/* rendered, with name references */
	enum stream stream;
	uint32_t object;		/* the queue's number, of stream_object */
};

struct proc {
	int pid;
	char role[128];
	struct line *lines;
	size_t n, cap;
	size_t first;			/* where it first appeared */
};

static struct proc procs[MAX_PROCS];
static size_t nprocs;

/* Every line, by process and index there, in the order of the trace. */
static struct {
	size_t proc, line;
} *order;
static size_t norder, order_cap;

static size_t proc_of(int pid, size_t lineno)
{
	for (size_t i = 0; i < nprocs; i++)
		if (procs[i].pid == pid)
			return i;
	if (nprocs == MAX_PROCS) {
		fprintf(stderr, "difftrace-norm: more than %d processes\n",
			MAX_PROCS);
		exit(2);
	}
	procs[nprocs].pid = pid;
	procs[nprocs].first = lineno;
	snprintf(procs[nprocs].role, sizeof(procs[nprocs].role), "unknown");
	return nprocs++;
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
	if (sscanf(line, "bf uar+0x%*x %*s wqe=ctrl:%8x%8x", &owner,
		   &word1) == 2) {
		*qpn = word1 >> 8;
		*index = (owner >> 8) & 0xffff;
		return true;
	}
	return false;
}

/*
 * The device sees doorbells as memory it looks at now and then, not as
 * writes: two rings of one register between two looks are one, a WQE
 * may run before its own doorbell is taken (the device was already
 * reading the queue), and a BlueFlame half may be written twice before
 * the device looks.  So neither send doorbells nor BlueFlame writes are
 * compared as events.  What the driver decided is in the ring all the
 * same: a WQE it handed over by BlueFlame carries its QPN and index in
 * its control segment.
 */
static enum stream stream_of(const char *line, uint32_t *object)
{
	static const struct {
		const char *format;
		enum stream stream;
	} queue_lines[] = {
		{ "sq qp=0x%x", ST_SQ },
		{ "rq qp=0x%x", ST_RQ },
		{ "srq srq=0x%x", ST_SRQ },
		{ "cqe cq=0x%x", ST_CQE },
		{ "db uar cq=0x%x,", ST_ARM },
	};
	unsigned int v, index;

	if (!strncmp(line, "db uar send=", 12))
		return ST_NONE;
	/* Only a copy the simulator found unlike the ring's WQE counts. */
	if (!strncmp(line, "bf ", 3))
		return strstr(line, " unlike wqe=") &&
		       wqe_of(line, object, &index) ? ST_BF : ST_NONE;
	for (size_t i = 0; i < sizeof(queue_lines) / sizeof(queue_lines[0]); i++)
		if (sscanf(line, queue_lines[i].format, &v) == 1) {
			/* 24 bits: an arm doorbell has its command above. */
			*object = v & 0xffffff;
			return queue_lines[i].stream;
		}
	return ST_CMD;
}

/* Render every line in the order of the trace; drop what is not compared. */
static void render_all(void)
{
	for (size_t i = 0; i < norder; i++) {
		struct proc *p = &procs[order[i].proc];
		struct line *l = &p->lines[order[i].line];

		if (l->stream != ST_NONE)
			l->text = render(l->stream == ST_BF ?
					 "BlueFlame copy unlike the ring's: " : "",
					 l->raw);
	}
}

struct queue {
	enum stream stream;
	uint32_t object;
	unsigned int name;		/* the object's name, 0 if none yet */
	size_t first;			/* its first line */
};

/*
 * Queues by kind, then by their object's name (given by the command that
 * created it, in the driver's order); one not named by then, by where it
 * first appears.
 */
static int by_name(const void *a, const void *b)
{
	const struct queue *x = a, *y = b;

	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	if (x->name != y->name)
		return !x->name ? 1 : !y->name ? -1 :
		       x->name < y->name ? -1 : 1;
	return x->first < y->first ? -1 : x->first > y->first;
}

/* The lines of one queue, in order. */
static void print_queue(const struct proc *p, const struct queue *q)
{
	const char *last = "";

	for (size_t j = 0; j < p->n; j++) {
		const struct line *l = &p->lines[j];

		if (l->stream != q->stream || l->object != q->object)
			continue;
		/*
		 * The device reads a send WQE again each time it retries it
		 * (after an RNR NAK): how often is when the peer posted its
		 * receive, timing, not the driver.  One line for the run.
		 */
		if (l->stream == ST_SQ && !strcmp(l->raw, last))
			continue;
		last = l->raw;
		emit(l->text);
	}
}

/* A process: its commands, then the work of each of its queues. */
static void print_proc(const struct proc *p)
{
	struct queue *queues = NULL;
	size_t nqueues = 0;

	for (size_t j = 0; j < p->n; j++)
		if (p->lines[j].stream == ST_CMD)
			emit(p->lines[j].text);
	for (size_t j = 0; j < p->n; j++) {
		const struct line *l = &p->lines[j];
		size_t i;

		if (l->stream == ST_CMD || l->stream == ST_NONE)
			continue;
		for (i = 0; i < nqueues; i++)
			if (queues[i].stream == l->stream &&
			    queues[i].object == l->object)
				break;
		if (i < nqueues)
			continue;
		queues = realloc(queues, (nqueues + 1) * sizeof(*queues));
		if (!queues)
			abort();
		queues[nqueues++] = (struct queue){
			l->stream, l->object,
			name_known(stream_object[l->stream], l->object), j
		};
	}
	qsort(queues, nqueues, sizeof(*queues), by_name);
	for (size_t i = 0; i < nqueues; i++)
		print_queue(p, &queues[i]);
	free(queues);
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
		struct line *l;
		int pid, used;
		char *arg;

		if (sscanf(line, "p%d %n", &pid, &used) != 1)
			continue;
		p = &procs[proc_of(pid, lineno++)];
		arg = strstr(line, " cmd=");
		if (!strncmp(line + used, "open ", 5) && arg)
			set_role(p, arg + 5);
		if (p->n == p->cap) {
			p->cap = p->cap ? 2 * p->cap : 256;
			p->lines = realloc(p->lines, p->cap * sizeof(*p->lines));
			if (!p->lines)
				abort();
		}
		if (norder == order_cap) {
			order_cap = order_cap ? 2 * order_cap : 1024;
			order = realloc(order, order_cap * sizeof(*order));
			if (!order)
				abort();
		}
		order[norder].proc = p - procs;
		order[norder++].line = p->n;
		l = &p->lines[p->n++];
		l->raw = strdup(line + used);
		if (!l->raw)
			abort();
		l->text = NULL;
		l->stream = stream_of(l->raw, &l->object);
	}
	render_all();
	qsort(procs, nprocs, sizeof(procs[0]), by_role);
	for (size_t i = 0; i < nprocs; i++) {
		printf("== %s\n", procs[i].role);
		print_proc(&procs[i]);
	}
	return 0;
}
