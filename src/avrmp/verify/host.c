/*
 * avrmp simulator host: runs a batch of calls of one AVR routine in libsimavr.
 *
 * Usage: avrmp-host FIRMWARE.elf MCU < batch
 *
 * Input (whitespace separated tokens):
 *   AVRMP1 entry done core_begin core_end max_cycles ncalls nops rmax opmax_1..opmax_nops
 *   then per call:
 *   rlen irq_at seed nints int_1..int_nints  op_1..op_nops   (ops as hex, "-" when empty)
 * All numbers are decimal; core_begin/core_end/irq_at are -1 when absent.
 *
 * Output: first a line {"layout": ...} or {"fatal": "..."}, then one JSON line per call.
 * Everything simavr prints goes to stderr, stdout carries only JSON.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <simavr/sim_avr.h>
#include <simavr/sim_core.h>
#include <simavr/sim_elf.h>

#define GUARD 16
#define MAX_BAD 64
#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL
/* IO register used as the "enable" bit of the harness's interrupt vector (data address 0x20). */
#define IRQ_ENABLE_ADDR 0x20
#define IRQ_VECTOR 1

static FILE *out;
static int saw_invalid_opcode;

static void logger(avr_t *avr, const int level, const char *fmt, va_list ap)
{
	char buf[512];
	(void)avr;
	vsnprintf(buf, sizeof buf, fmt, ap);
	if (strstr(buf, "Invalid Opcode") || strstr(buf, "invalid opcode"))
		saw_invalid_opcode = 1;
	if (level <= LOG_ERROR)
		fputs(buf, stderr);
}

static void fatal(const char *msg)
{
	fprintf(out, "{\"fatal\": \"%s\"}\n", msg);
	fflush(out);
	exit(3);
}

/* ---- input tokens ---- */
static char *inbuf;
static char *tokp;

static char *next_token(void)
{
	char *t = strtok_r(NULL, " \t\r\n", &tokp);
	if (!t)
		fatal("truncated input from the Python driver");
	return t;
}

static long long next_num(void)
{
	return strtoll(next_token(), NULL, 10);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return 0;
}

/* ---- per-call trace state ---- */
typedef struct {
	uint64_t pc_hash, addr_hash;
	uint32_t sp;        /* SP before the current instruction */
	uint32_t s0;        /* SP before the CALL */
	uint32_t r_lo, r_hi; /* result buffer [r_lo, r_hi) */
	uint32_t buf_end;   /* first address above all operand buffers + guard */
	uint16_t bad[MAX_BAD];
	int nbad;
	uint8_t *bad_seen;  /* per-address flag */
} trace_t;

static inline void mix_addr(trace_t *t, uint32_t v)
{
	t->addr_hash = (t->addr_hash ^ v) * FNV_PRIME;
}

static inline void add_bad(trace_t *t, uint32_t a)
{
	a &= 0xffff;
	if (t->bad_seen[a])
		return;
	t->bad_seen[a] = 1;
	if (t->nbad < MAX_BAD)
		t->bad[t->nbad++] = (uint16_t)a;
}

static inline void rd(trace_t *t, uint32_t a)
{
	mix_addr(t, a);
}

/* ordinary store (ST/STD/STS): allowed in r, or inside the live stack frame above SP */
static inline void wr(trace_t *t, uint32_t a)
{
	mix_addr(t, a | 0x10000);
	if (a >= t->r_lo && a < t->r_hi)
		return;
	if (a > t->sp && a <= t->s0)
		return;
	add_bad(t, a);
}

/* stack store (PUSH/CALL): at SP, must stay between the buffers and the caller's SP */
static inline void wr_stack(trace_t *t, uint32_t a)
{
	mix_addr(t, a | 0x10000);
	if (a >= t->buf_end && a <= t->s0)
		return;
	add_bad(t, a);
}

static inline uint16_t flash16(avr_t *avr, uint32_t pc)
{
	return avr->flash[pc] | (avr->flash[pc + 1] << 8);
}

static inline uint16_t reg16(avr_t *avr, int r)
{
	return avr->data[r] | (avr->data[r + 1] << 8);
}

/* decode the data accesses of the instruction at pc (before it executes) */
static inline void trace_mem(avr_t *avr, trace_t *t, uint32_t pc, uint16_t op, int asz)
{
	uint32_t sp = t->sp;
	if ((op & 0xD200) == 0x8000 || (op & 0xD200) == 0x8200) {
		/* LDD/STD Rd, Y+q / Z+q (includes LD/ST Y, Z) */
		uint32_t q = ((op >> 8) & 0x20) | ((op >> 7) & 0x18) | (op & 7);
		uint32_t a = reg16(avr, (op & 8) ? 28 : 30) + q;
		if (op & 0x0200)
			wr(t, a);
		else
			rd(t, a);
		return;
	}
	if ((op & 0xFC00) == 0x9000) {
		int store = op & 0x0200;
		uint32_t a;
		switch (op & 0x000F) {
		case 0x0: a = flash16(avr, pc + 2); break;           /* LDS/STS */
		case 0x1: a = reg16(avr, 30); break;                 /* Z+ */
		case 0x2: a = (reg16(avr, 30) - 1) & 0xffff; break;  /* -Z */
		case 0x9: a = reg16(avr, 28); break;                 /* Y+ */
		case 0xA: a = (reg16(avr, 28) - 1) & 0xffff; break;  /* -Y */
		case 0xC: a = reg16(avr, 26); break;                 /* X */
		case 0xD: a = reg16(avr, 26); break;                 /* X+ */
		case 0xE: a = (reg16(avr, 26) - 1) & 0xffff; break;  /* -X */
		case 0xF:                                            /* PUSH/POP */
			if (store)
				wr_stack(t, sp);
			else
				rd(t, sp + 1);
			return;
		default:
			return; /* LPM/ELPM/XCH/... : not data memory (or not on these cores) */
		}
		if (store)
			wr(t, a);
		else
			rd(t, a);
		return;
	}
	if ((op & 0xFE0E) == 0x940E || (op & 0xF000) == 0xD000 || op == 0x9509 || op == 0x9519) {
		/* CALL / RCALL / ICALL / EICALL push the return address */
		for (int i = 0; i < asz; i++)
			wr_stack(t, sp - i);
		return;
	}
	if (op == 0x9508 || op == 0x9518) { /* RET / RETI */
		for (int i = 1; i <= asz; i++)
			rd(t, sp + i);
	}
}

static inline int is_two_word(uint16_t op)
{
	return (op & 0xFC0F) == 0x9000 || (op & 0xFE0C) == 0x940C;
}

static uint64_t rng_state;
static uint8_t rng8(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint8_t)(rng_state >> 24);
}

static void sp_set(avr_t *avr, uint32_t sp)
{
	avr->data[R_SPL] = sp & 0xff;
	avr->data[R_SPH] = (sp >> 8) & 0xff;
}

static uint32_t sp_get(avr_t *avr)
{
	return avr->data[R_SPL] | (avr->data[R_SPH] << 8);
}

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: %s FIRMWARE.elf MCU [STACK_TOP] < batch\n", argv[0]);
		return 2;
	}
	/* keep simavr's chatter off the JSON channel */
	int outfd = dup(1);
	dup2(2, 1);
	out = fdopen(outfd, "w");
	avr_global_logger_set(logger);

	/* read the whole batch */
	size_t cap = 1 << 16, len = 0;
	inbuf = malloc(cap);
	for (;;) {
		if (len + 4096 > cap) {
			cap *= 2;
			inbuf = realloc(inbuf, cap);
		}
		size_t n = fread(inbuf + len, 1, cap - len - 1, stdin);
		if (n == 0)
			break;
		len += n;
	}
	inbuf[len] = 0;
	char *magic = strtok_r(inbuf, " \t\r\n", &tokp);
	if (!magic || strcmp(magic, "AVRMP1"))
		fatal("bad input header from the Python driver");
	uint32_t entry = next_num(), done = next_num();
	long long core_begin = next_num(), core_end = next_num();
	uint64_t max_cycles = next_num();
	long ncalls = next_num();
	int nops = next_num();
	uint32_t rmax = next_num();
	uint32_t opmax[8];
	if (nops < 0 || nops > 8)
		fatal("too many operand buffers (at most 8)");
	for (int i = 0; i < nops; i++)
		opmax[i] = next_num();

	elf_firmware_t fw;
	memset(&fw, 0, sizeof fw);
	if (elf_read_firmware(argv[1], &fw) != 0)
		fatal("simavr could not read the firmware ELF");
	avr_t *avr = avr_make_mcu_by_name(argv[2]);
	if (!avr)
		fatal("simavr does not know this MCU; see simavr --list-cores");
	avr_init(avr);
	avr->log = 0;
	avr_load_firmware(avr, &fw);
	avr->log = 0;

	uint32_t ramstart = avr->ioend + 1;
	uint32_t ramend = avr->ramend;
	/* The caller's SP (default RAMEND); a top with a small low byte makes a frame cross a
	 * 256-byte boundary, so a non-atomic update of SPH/SPL becomes visible to interrupts. */
	uint32_t sptop = argc == 4 ? (uint32_t)strtoul(argv[3], NULL, 0) : ramend;
	int asz = avr->address_size ? avr->address_size : 2;
	uint32_t codeend = fw.flashbase + fw.flashsize;
	uint32_t vec_addr = IRQ_VECTOR * avr->vector_size;

	/* layout: guard, r, guard, a, guard, b, guard ... stack at RAMEND */
	uint32_t r_addr = ramstart + GUARD;
	uint32_t op_addr[8];
	uint32_t p = r_addr + rmax + GUARD;
	for (int i = 0; i < nops; i++) {
		op_addr[i] = p;
		p += opmax[i] + GUARD;
	}
	uint32_t buf_end = p;
	uint32_t min_stack = 48; /* room for the harness and ISR */
	if (sptop > ramend)
		fatal("stack top above RAMEND");
	if (buf_end + min_stack > sptop) {
		char msg[256];
		snprintf(msg, sizeof msg,
			 "operand buffers need %u bytes of SRAM plus stack but %s has %u bytes",
			 buf_end - ramstart, argv[2], ramend - ramstart + 1);
		fatal(msg);
	}
	fprintf(out, "{\"layout\": {\"ramstart\": %u, \"ramend\": %u, \"r\": %u, \"ops\": [", ramstart,
		ramend, r_addr);
	for (int i = 0; i < nops; i++)
		fprintf(out, "%s%u", i ? ", " : "", op_addr[i]);
	fprintf(out, "], \"address_size\": %d, \"vector_size\": %d}}\n", asz, avr->vector_size);

	static avr_int_vector_t vec;
	memset(&vec, 0, sizeof vec);
	vec.vector = IRQ_VECTOR;
	vec.enable.reg = IRQ_ENABLE_ADDR;
	vec.enable.bit = 0;
	vec.enable.mask = 1;
	avr_register_vector(avr, &vec);

	uint8_t *bad_seen = calloc(1 << 16, 1);
	uint8_t *opbuf[8];
	uint32_t oplen[8];
	for (int i = 0; i < nops; i++)
		opbuf[i] = malloc(opmax[i] + 1);
	static const int cs_regs[] = {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 28, 29};
	const int ncs = sizeof cs_regs / sizeof cs_regs[0];

	for (long c = 0; c < ncalls; c++) {
		uint32_t rlen = next_num();
		long long irq_at = next_num();
		uint64_t seed = next_num();
		int nints = next_num();
		long long ints[8];
		if (nints < 0 || nints > 8)
			fatal("too many integer arguments (at most 8)");
		for (int i = 0; i < nints; i++)
			ints[i] = next_num();
		for (int i = 0; i < nops; i++) {
			char *h = next_token();
			oplen[i] = 0;
			if (strcmp(h, "-") != 0) {
				size_t hl = strlen(h) / 2;
				if (hl > opmax[i])
					fatal("operand longer than announced");
				for (size_t k = 0; k < hl; k++)
					opbuf[i][k] = hexval(h[2 * k]) << 4 | hexval(h[2 * k + 1]);
				oplen[i] = hl;
			}
		}
		if (rlen > rmax)
			fatal("result longer than announced");

		/* clean state */
		avr_interrupt_reset(avr);
		memset(avr->data + ramstart, 0, ramend - ramstart + 1);
		for (uint32_t i = 0; i < rlen; i++)
			avr->data[r_addr + i] = (uint8_t)(0xC3 ^ (i * 0x1D));
		for (int i = 0; i < nops; i++)
			memcpy(avr->data + op_addr[i], opbuf[i], oplen[i]);
		rng_state = 0x9E3779B97F4A7C15ULL ^ (seed * 0xD1B54A32D192ED03ULL);
		if (!rng_state)
			rng_state = 1;
		for (int i = 0; i < 32; i++)
			avr->data[i] = rng8();
		avr->data[1] = 0;
		int argreg = 24;
		uint32_t ptrs[9];
		ptrs[0] = r_addr;
		for (int i = 0; i < nops; i++)
			ptrs[i + 1] = op_addr[i];
		for (int i = 0; i <= nops && argreg >= 8; i++, argreg -= 2) {
			avr->data[argreg] = ptrs[i] & 0xff;
			avr->data[argreg + 1] = ptrs[i] >> 8;
		}
		for (int i = 0; i < nints && argreg >= 8; i++, argreg -= 2) {
			avr->data[argreg] = ints[i] & 0xff;
			avr->data[argreg + 1] = (ints[i] >> 8) & 0xff;
		}
		uint8_t saved[32];
		memcpy(saved, avr->data, 32);
		uint8_t en_saved = avr->data[IRQ_ENABLE_ADDR];
		sp_set(avr, sptop);
		for (int i = 0; i < 8; i++)
			avr->sreg[i] = 0;
		avr->interrupt_state = 0;
		if (irq_at >= 0)
			avr->sreg[S_I] = 1; /* enabled long before the call: no SEI shadow */
		avr->interrupt_state = 0;
		avr->data[R_SREG] = irq_at >= 0 ? 0x80 : 0;
		avr->pc = entry;
		avr->state = cpu_Running;
		saw_invalid_opcode = 0;

		trace_t t;
		t.pc_hash = FNV_OFFSET;
		t.addr_hash = FNV_OFFSET;
		t.s0 = sptop;
		t.r_lo = r_addr;
		t.r_hi = r_addr + rlen;
		t.buf_end = buf_end;
		t.nbad = 0;
		t.bad_seen = bad_seen;

		const char *err = NULL;
		char errbuf[160];
		uint64_t c0 = avr->cycle;
		uint64_t cb_cycle = 0, ce_cycle = 0;
		int cb_seen = 0, ce_seen = 0;
		uint32_t minsp = sptop;
		long long ninstr = -1; /* the harness CALL is not counted */
		int in_isr = 0, irq_raised = 0, irq_taken = 0;
		long irq_sp = -1; /* the routine's SP when the interrupt came (before the vector push) */

		for (;;) {
			uint32_t pc = avr->pc;
			int leaving_isr = 0;
			if (in_isr) {
				if (pc >= codeend) {
					err = "interrupt handler jumped outside the program";
					break;
				}
				leaving_isr = flash16(avr, pc) == 0x9518;
			} else {
				if (pc == done)
					break;
				if (pc == (uint32_t)core_begin && !cb_seen) {
					cb_seen = 1;
					cb_cycle = avr->cycle;
				}
				if (pc == (uint32_t)core_end && !ce_seen) {
					ce_seen = 1;
					ce_cycle = avr->cycle;
				}
				if (pc + 2 > codeend) {
					snprintf(errbuf, sizeof errbuf,
						 "jumped outside the program (PC=0x%x)", pc);
					err = errbuf;
					break;
				}
				uint16_t op = flash16(avr, pc);
				t.pc_hash = (t.pc_hash ^ pc) * FNV_PRIME;
				t.sp = sp_get(avr);
				/* sample SP where it is settled: not between the OUTs that
				 * rewrite SPH, SREG, SPL one after another */
				if (!((op & 0xF800) == 0xB800 &&
				      (((op >> 5) & 0x30) | (op & 0xF)) >= 0x3d) &&
				    t.sp < minsp)
					minsp = t.sp;
				trace_mem(avr, &t, pc, op, asz);
			}
			if (avr->cycle - c0 > max_cycles) {
				snprintf(errbuf, sizeof errbuf, "timeout after %llu cycles",
					 (unsigned long long)(avr->cycle - c0));
				err = errbuf;
				break;
			}
			/* request the interrupt so that it is taken at the boundary after
			 * instruction irq_at (the harness CALL is instruction 0) */
			if (irq_at >= 0 && !irq_raised && !in_isr && ninstr + 1 >= irq_at) {
				irq_raised = 1;
				avr->data[IRQ_ENABLE_ADDR] = en_saved | 1;
				avr_raise_interrupt(avr, &vec);
			}
			avr_run(avr);
			/* simavr lets two instructions run after I is set before a pending
			 * interrupt is taken; the hardware runs exactly one. */
			if (avr->interrupt_state < 0)
				avr->interrupt_state = avr_has_pending_interrupts(avr) ? 1 : 0;
			if (saw_invalid_opcode) {
				snprintf(errbuf, sizeof errbuf, "invalid opcode at PC=0x%x", pc);
				err = errbuf;
				break;
			}
			if (avr->state != cpu_Running) {
				snprintf(errbuf, sizeof errbuf,
					 avr->state == cpu_Sleeping || avr->state == cpu_Done
						 ? "executed SLEEP at PC=0x%x"
						 : "simulator crashed at PC=0x%x",
					 pc);
				err = errbuf;
				break;
			}
			if (in_isr) {
				if (leaving_isr)
					in_isr = 0;
				continue;
			}
			if (irq_raised && !irq_taken && avr->pc == vec_addr) {
				irq_taken = 1;
				irq_sp = (long)sp_get(avr) + asz;
				in_isr = 1;
				avr->data[IRQ_ENABLE_ADDR] = en_saved;
			}
			ninstr++;
		}
		avr->data[IRQ_ENABLE_ADDR] = en_saved;
		uint64_t c_end = avr->cycle;
		if (!err && minsp < buf_end) {
			snprintf(errbuf, sizeof errbuf,
				 "stack overflowed into the operand buffers (SP reached 0x%x)", minsp);
			err = errbuf;
		}
		if (!err && core_begin >= 0 && (!cb_seen || !ce_seen)) {
			err = "core_begin/core_end symbols were not both reached";
		}
		uint64_t abi = c_end - c0;
		uint64_t core = (core_begin >= 0 && cb_seen && ce_seen) ? ce_cycle - cb_cycle : abi;

		int cs_ok = 1;
		int clob[18], nclob = 0;
		for (int i = 0; i < ncs; i++)
			if (avr->data[cs_regs[i]] != saved[cs_regs[i]]) {
				cs_ok = 0;
				clob[nclob++] = cs_regs[i];
			}
		int inputs_ok = 1;
		for (int i = 0; i < nops; i++)
			if (memcmp(avr->data + op_addr[i], opbuf[i], oplen[i]))
				inputs_ok = 0;
		long long depth = (long long)sptop - minsp - asz;
		if (depth < 0)
			depth = 0;

		fprintf(out, "{\"result\": \"");
		for (uint32_t i = 0; i < rlen; i++)
			fprintf(out, "%02x", avr->data[r_addr + i]);
		fprintf(out,
			"\", \"abi_cycles\": %llu, \"core_cycles\": %llu, \"stack_depth\": %lld, "
			"\"pc_digest\": \"%016llx\", \"addr_digest\": \"%016llx\", "
			"\"instructions\": %lld, \"callee_saved_ok\": %s, \"r1_zero\": %s, "
			"\"sp_ok\": %s, \"inputs_unmodified\": %s, \"irq_taken\": %s, \"irq_sp\": %ld, "
			"\"bad_writes\": [",
			(unsigned long long)abi, (unsigned long long)core, depth,
			(unsigned long long)t.pc_hash, (unsigned long long)t.addr_hash,
			ninstr < 0 ? 0 : ninstr, cs_ok ? "true" : "false",
			avr->data[1] == 0 ? "true" : "false",
			sp_get(avr) == sptop ? "true" : "false", inputs_ok ? "true" : "false",
			irq_taken ? "true" : "false", irq_sp);
		for (int i = 0; i < t.nbad; i++)
			fprintf(out, "%s%u", i ? ", " : "", t.bad[i]);
		fprintf(out, "], \"clobbered_regs\": [");
		for (int i = 0; i < nclob; i++)
			fprintf(out, "%s%d", i ? ", " : "", clob[i]);
		if (err)
			fprintf(out, "], \"error\": \"%s\"}\n", err);
		else
			fprintf(out, "], \"error\": null}\n");
		for (int i = 0; i < t.nbad; i++)
			bad_seen[t.bad[i]] = 0;
		/* addresses beyond MAX_BAD stay flagged: clear the whole map in that rare case */
		if (t.nbad >= MAX_BAD)
			memset(bad_seen, 0, 1 << 16);
	}
	fflush(out);
	return 0;
}
