/*
 * avrmp simulator host: runs a batch of calls of one AVR routine in libsimavr.
 *
 * Usage: avrmp-host FIRMWARE.elf MCU [STACK_TOP] < batch
 *
 * Input (whitespace separated tokens):
 *   AVRMP6 entry done vectors_end harness_end filler core_begin core_end max_cycles lacks ncalls
 *   nops
 *   rmax opmax_1..opmax_nops
 *   then per call:
 *   rlen irq_at seed flags sreg sptop r_addr op_addr_1..op_addr_nops nints int_1..int_nints
 *   op_1..op_nops   (ops as hex, "-" when empty)
 * lacks: 1 = the part has no MUL family, 2 = no JMP/CALL (the host refuses them when run).
 * All numbers are decimal; core_begin/core_end/irq_at are -1 when absent; sptop, r_addr and the
 * op_addrs 0 for the default layout (buffers low in SRAM, SP at STACK_TOP or RAMEND).
 * vectors_end: where the part's vector table ends (the harness pads its two vectors to it);
 * harness_end: where the harness's code ends; the routine's code and data are the flash between
 *   vectors_end and entry and between harness_end and the end of the program (avr-ld puts
 *   PROGMEM before the harness and .text after it); LPM/ELPM elsewhere is refused. On a part
 *   over 64 KB the harness ends with a filler that puts .text above 64 KB (128 KB) as a large
 *   program may: LPM there reaches only PROGMEM.
 * filler: where that filler begins (harness_end when there is none).
 * flags: 1 = fill SRAM outside the operands with random bytes (from seed) instead of zeros, and
 *            RAMPZ and the return address too (the routine returns past the program, at an
 *            address whose bytes are not the harness's, so reading them as data is caught);
 *        2 = take an interrupt after every instruction of the routine where one could be taken
 *            (the handler runs on the routine's state, which is then restored: the bytes it
 *            overwrote are marked, and a later read of one by the routine is a hazard);
 *        4 = profile: the call's line gains "profile": [[pc, cycles], ...], the cycles spent
 *            at each instruction address (bytes) from core_begin up to core_end.
 *
 * Output: first a line {"layout": ...} or {"fatal": "..."}, then one JSON line per call; a call
 * that times out ends the batch.  Everything simavr prints goes to stderr, stdout carries JSON.
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

/* GUARD (bytes between buffers) and HANDLER_ROOM (the least room below the buffers' end for the
 * stack and the handler) come from verify/inputs.py, passed by simulator.py as -D options. */
#if !defined(GUARD) || !defined(HANDLER_ROOM)
#error "build with -DGUARD=... -DHANDLER_ROOM=... (simulator.host_binary)"
#endif
#define MAX_BAD 64
#define MAX_IO 16
#define ISR_ZONE 64 /* bytes below SP the harness's handler may write (it writes 31 on atmega) */
#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL
/* IO register used as the "enable" bit of the harness's interrupt vector (data address 0x20). */
#define IRQ_ENABLE_ADDR 0x20
#define IRQ_VECTOR 1
#define IO_SPL 0x5d
#define IO_SPH 0x5e
#define IO_SREG 0x5f
#define IO_FIRST 0x20 /* the I/O registers' data addresses: 0x20..0x5f */
#define FLAG_RANDOM_RAM 1
#define FLAG_ISR_MODEL 2
#define FLAG_PROFILE 4

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
	uint32_t buf_end;   /* first address above all buffers + guard: the stack lies above */
	int nops;
	uint32_t op_lo[8], op_hi[8];
	uint16_t bad[MAX_BAD];
	int nbad;
	uint8_t *bad_seen;  /* per-address flag */
	uint16_t io[MAX_IO];
	int nio;
	long long now;      /* index of the current instruction (0: the harness CALL) */
	long long *wrote;   /* per address: when the routine last stored there (see written) */
	long long *clobbered; /* per address: when an interrupt last overwrote it */
	long long boundaries; /* instruction boundaries so far where an interrupt could be taken */
	long long last_boundary; /* the instruction after which the latest of them came */
	long long *exposed;  /* per address: `boundaries` when SP last rose above it, -1 if below SP */
	uint32_t settled_sp; /* SP when neither half of it was last left written alone */
	char hazard[200];
	char bad_read[200]; /* the first load from outside the call's memory, or of an I/O register */
	int sp_pending;     /* SPL or SPH written (by OUT or a store), its partner not yet */
	uint32_t rampz;     /* RAMPZ's data address (0: the part has none) */
	uint32_t own_flash[4]; /* [0], [1] and [2], [3]: the routine's code and data in flash */
	int outside_core;   /* the routine marks a core and this instruction is before or after it */
	char core_gap[200]; /* the first access to a buffer outside the core */
} trace_t;

/* Addresses in the digest are relative to the buffer or stack they fall in, so that the
 * data-address trace does not depend on where the buffers were placed. */
static uint32_t norm(trace_t *t, uint32_t a)
{
	if (a + GUARD >= t->r_lo && a < t->r_hi + GUARD)
		return (1u << 20) | (a + GUARD - t->r_lo);
	for (int i = 0; i < t->nops; i++)
		if (a + GUARD >= t->op_lo[i] && a < t->op_hi[i] + GUARD)
			return ((2u + i) << 20) | (a + GUARD - t->op_lo[i]);
	if (a >= t->buf_end && a <= t->s0 + 8)
		return (12u << 20) | (t->s0 + 8 - a);
	return a;
}

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

static void first_message(char *buf, size_t size, const char *fmt, va_list ap)
{
	if (!buf[0])
		vsnprintf(buf, size, fmt, ap);
}

static void set_hazard(trace_t *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	first_message(t->hazard, sizeof t->hazard, fmt, ap);
	va_end(ap);
}

static void set_bad_read(trace_t *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	first_message(t->bad_read, sizeof t->bad_read, fmt, ap);
	va_end(ap);
}

/* whether an ordinary store to a is the routine's to make: in r, or inside the live stack frame
 * above SP */
static int writable(trace_t *t, uint32_t a)
{
	return (a >= t->r_lo && a < t->r_hi) || (a > t->sp && a <= t->s0);
}

/* whether a load from a is one of the call's own: where it may write (the stack up to the
 * caller's SP takes in the return address), or an operand */
static int readable(trace_t *t, uint32_t a)
{
	if (writable(t, a))
		return 1;
	for (int i = 0; i < t->nops; i++)
		if (a >= t->op_lo[i] && a < t->op_hi[i])
			return 1;
	return 0;
}

/* the CPU's own I/O registers, the routine's to read and write: SP, SREG and RAMPZ (which
 * avr-gcc treats as call-clobbered); any other is a peripheral's */
static inline int own_io(trace_t *t, uint32_t a)
{
	return a == IO_SPL || a == IO_SPH || a == IO_SREG || (t->rampz && a == t->rampz);
}

/* a write to the I/O space (OUT, SBI, CBI, or a store to its data address): only own_io */
static inline void wr_io(trace_t *t, uint32_t a)
{
	if (a == IO_SPL || a == IO_SPH) {
		t->sp_pending ^= a == IO_SPL ? 1 : 2;
		if (t->sp_pending == 3)
			t->sp_pending = 0;
		return;
	}
	if (own_io(t, a))
		return;
	for (int i = 0; i < t->nio; i++)
		if (t->io[i] == a)
			return;
	if (t->nio < MAX_IO)
		t->io[t->nio++] = (uint16_t)a;
}

/* a read of the I/O space (IN, SBIC, SBIS, or a load from its data address): only own_io
 * (reading a peripheral's register can change its state, e.g. a UART's data register) */
static inline void rd_io(trace_t *t, uint32_t a)
{
	if (!own_io(t, a))
		set_bad_read(t, "instruction %lld reads I/O register 0x%02x (reading a peripheral's "
			   "register can change its state)", t->now, a);
}

/* A routine that marks a core keeps its work on the buffers inside it: a core_end placed before
 * the last stores (or a core_begin after the first loads) would leave cycles out of the core. */
static void check_core_gap(trace_t *t, uint32_t a)
{
	int in_buffer = a >= t->r_lo && a < t->r_hi;
	for (int i = 0; i < t->nops && !in_buffer; i++)
		in_buffer = a >= t->op_lo[i] && a < t->op_hi[i];
	if (in_buffer && !t->core_gap[0])
		snprintf(t->core_gap, sizeof t->core_gap, "instruction %lld reaches 0x%04x, in the result "
			 "or an operand, outside the core labels: the core cycles would leave that work "
			 "out (place core_begin before the first such access, core_end after the last)",
			 t->now, a);
}

static inline void rd(trace_t *t, uint32_t a)
{
	a &= 0xffff;
	mix_addr(t, norm(t, a));
	if (t->outside_core)
		check_core_gap(t, a);
	if (a >= IO_FIRST && a <= IO_SREG) { /* LD/LDS of an I/O register: as IN */
		rd_io(t, a);
		return;
	}
	if (a < 32)
		set_bad_read(t, "instruction %lld reads r%u through its data address 0x%04x (the "
			     "register file is in data space on classic cores only, not on XMEGA)",
			     t->now, a, a);
	else if (t->clobbered[a] > t->wrote[a])
		set_hazard(t, "an interrupt after instruction %lld overwrites 0x%04x below SP, which the "
			   "routine reads back at instruction %lld (data kept below SP)",
			   t->clobbered[a] / 2, a, t->now);
	else if (!readable(t, a))
		set_bad_read(t, "instruction %lld reads 0x%04x, outside the operands, the result and the "
			   "stack above SP (an I/O register, or memory the routine does not own)",
			   t->now, a);
}

/* Time stamps: 2k for instruction k, 2k + 1 for an interrupt taken after it. */
static inline void written(trace_t *t, uint32_t a)
{
	t->wrote[a & 0xffff] = 2 * t->now;
}

/* ordinary store (ST/STD/STS): allowed in r, or inside the live stack frame above SP */
static inline void wr(trace_t *t, uint32_t a)
{
	a &= 0xffff;
	mix_addr(t, norm(t, a) | 0x10000000u);
	if (t->outside_core)
		check_core_gap(t, a);
	if (a >= IO_FIRST && a <= IO_SREG) { /* ST/STS to an I/O register (SREG, SP): as OUT */
		wr_io(t, a);
		return;
	}
	written(t, a);
	if (!writable(t, a))
		add_bad(t, a);
}

/* stack store (PUSH/CALL): at SP, must stay between the buffers and the caller's SP */
static inline void wr_stack(trace_t *t, uint32_t a)
{
	a &= 0xffff;
	mix_addr(t, norm(t, a) | 0x10000000u);
	written(t, a);
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

/* program memory read (LPM/ELPM) or write (SPM): in the address trace, tagged */
static inline void flash_access(avr_t *avr, trace_t *t, int extended)
{
	uint32_t z = reg16(avr, 30);
	if (extended && avr->rampz)
		z |= (uint32_t)avr->data[avr->rampz] << 16;
	mix_addr(t, z | 0x20000000u);
	/* over 64 KB, LPM reaches the first 64 KB, where avr-ld puts .progmem, and the filler
	 * puts .text beyond */
	if (!extended && avr->flashend > 0xffff && !(z >= t->own_flash[0] && z < t->own_flash[1]))
		set_bad_read(t, "instruction %lld reads 0x%x by LPM, which reaches only the first "
			     "64 KB: .text lies above them here, as in a large program (use .progmem, "
			     "or ELPM with RAMPZ)", t->now, z);
	else if (!(z >= t->own_flash[0] && z < t->own_flash[1]) &&
		 !(z >= t->own_flash[2] && z < t->own_flash[3]))
		set_bad_read(t, "instruction %lld reads program memory at 0x%x, outside the routine's "
			     "code and data (the vector table, the harness or unprogrammed flash%s)",
			     t->now, z, extended ? "; ELPM reads RAMPZ:Z" : "");
}

static void trace_io(avr_t *avr, trace_t *t, uint16_t op)
{
	(void)avr;
	if ((op & 0xF800) == 0xB800) /* OUT A, Rr */
		wr_io(t, 0x20 + (((op >> 5) & 0x30) | (op & 0xF)));
	else if ((op & 0xFD00) == 0x9800) /* CBI / SBI A, b */
		wr_io(t, 0x20 + ((op >> 3) & 0x1F));
	else if ((op & 0xF800) == 0xB000) /* IN Rd, A */
		rd_io(t, 0x20 + (((op >> 5) & 0x30) | (op & 0xF)));
	else if ((op & 0xFD00) == 0x9900) /* SBIC / SBIS A, b */
		rd_io(t, 0x20 + ((op >> 3) & 0x1F));
}

/* the data accesses of the instruction at pc (before it executes) */
static void trace_mem(avr_t *avr, trace_t *t, uint32_t pc, uint16_t op, int asz)
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
	if (op == 0x95C8 || op == 0x95D8 || op == 0x95E8 || op == 0x95F8) {
		flash_access(avr, t, op == 0x95D8); /* LPM, ELPM, SPM, SPM Z+ */
		return;
	}
	if ((op & 0xFC00) == 0x9000) {
		int store = op & 0x0200;
		uint32_t a;
		switch (op & 0x000F) {
		case 0x0: a = flash16(avr, pc + 2); break;           /* LDS/STS */
		case 0x1: a = reg16(avr, 30); break;                 /* Z+ */
		case 0x2: a = (reg16(avr, 30) - 1) & 0xffff; break;  /* -Z */
		case 0x4: case 0x5: case 0x6: case 0x7:              /* LPM/ELPM Rd, Z(+) */
			if (!store)
				flash_access(avr, t, op & 2);
			return;
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
			return; /* XCH/LAS/...: not on these cores */
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
		return;
	}
	trace_io(avr, t, op);
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

static uint8_t sreg_get(avr_t *avr)
{
	uint8_t s = 0;
	for (int i = 0; i < 8; i++)
		if (avr->sreg[i])
			s |= 1 << i;
	return s;
}

static void sreg_set(avr_t *avr, uint8_t s)
{
	for (int i = 0; i < 8; i++)
		avr->sreg[i] = (s >> i) & 1;
	avr->data[R_SREG] = s;
}

/*
 * Without running a handler, on every call: SP rising from `before` to `after` leaves the bytes
 * between below SP, exposed to any interrupt from the next boundary on; SP falling covers bytes
 * again, and a byte that an interrupt could have taken while it was exposed counts as
 * overwritten at the latest such boundary (after the byte's exposure, so after its last store;
 * a store by this instruction, a PUSH, still wins): a later read of it is the hazard the
 * handler sweep finds, on the inputs it does not sweep.
 */
static void track_exposure(trace_t *t, uint32_t before, uint32_t after, uint32_t ramend)
{
	if (after > ramend)
		after = ramend;
	if (before > ramend)
		before = ramend;
	for (uint32_t a = after + 1; a <= before; a++) { /* covered */
		if (t->exposed[a] >= 0 && t->boundaries > t->exposed[a])
			t->clobbered[a] = 2 * t->last_boundary + 1;
		t->exposed[a] = -1;
	}
	for (uint32_t a = before + 1; a <= after; a++)
		t->exposed[a] = t->boundaries;
}

/*
 * Take an interrupt now, at the boundary before the next instruction (k), as the hardware
 * would: push the PC, clear I, run the harness's handler to its RETI.  Then put the routine's
 * state back (registers, SREG, SP, PC, cycles and the bytes the handler wrote) and mark those
 * bytes as overwritten at k, so that a later read of one by the routine is a hazard.  The
 * handler writing outside the stack (SP half-written, or a frame too deep) is a hazard at once.
 */
static void isr_at_boundary(avr_t *avr, trace_t *t, uint32_t vec_addr, uint32_t ramend,
			    uint32_t en_addr)
{
	uint8_t regs[32], zone[ISR_ZONE];
	memcpy(regs, avr->data, 32);
	uint8_t sreg = sreg_get(avr), en = avr->data[en_addr];
	int8_t istate = avr->interrupt_state;
	uint32_t sp = sp_get(avr), pc = avr->pc, lo = sp >= ISR_ZONE - 1 ? sp - ISR_ZONE + 1 : 0;
	uint64_t cycle = avr->cycle;
	if (sp > ramend) {
		set_hazard(t, "SP is 0x%04x after instruction %lld: an interrupt there pushes outside "
			   "SRAM", sp, t->now);
		return;
	}
	memcpy(zone, avr->data + lo, sp - lo + 1);
	_avr_push_addr(avr, pc);
	avr->sreg[S_I] = 0;
	avr->pc = vec_addr;
	uint32_t low = sp_get(avr);
	for (int steps = 0; steps < 2000 && avr->pc != pc; steps++) {
		avr->pc = avr_run_one(avr);
		if (sp_get(avr) < low)
			low = sp_get(avr);
	}
	int returned = avr->pc == pc && sp_get(avr) == sp;
	/* put the routine's state back */
	memcpy(avr->data + lo, zone, sp - lo + 1);
	memcpy(avr->data, regs, 32);
	sreg_set(avr, sreg);
	avr->interrupt_state = istate;
	avr->data[en_addr] = en;
	sp_set(avr, sp);
	avr->pc = pc;
	avr->cycle = cycle;
	if (!returned || low < lo) {
		set_hazard(t, "the interrupt handler did not return (SP 0x%04x after instruction %lld)",
			   sp, t->now);
		return;
	}
	if (sp >= t->buf_end && sp <= t->s0 && low + 1 < t->buf_end) {
		/* SP itself is sound: the free SRAM above the harness's buffers is what runs out */
		set_hazard(t, "an interrupt after instruction %lld pushes down to 0x%04x, into the "
			   "verification buffers (they end at 0x%04x): this part has too little SRAM "
			   "above them for the routine's stack and an interrupt frame (or SP is "
			   "half-written)", t->now, low + 1, t->buf_end);
		return;
	}
	if (low + 1 < t->buf_end || sp > t->s0) {
		set_hazard(t, "an interrupt after instruction %lld pushes at 0x%04x..0x%04x, outside the "
			   "stack: SP half-written or the frame too deep", t->now, low + 1, sp);
		return;
	}
	for (uint32_t a = low + 1; a <= sp; a++)
		t->clobbered[a] = 2 * t->now + 1;
}

#define LACKS_MUL 1      /* MUL, MULS, MULSU, FMUL, FMULS, FMULSU */
#define LACKS_JMP_CALL 2 /* JMP and CALL (parts with 8 KB of flash or less) */

/* The name of op if the part lacks it (simavr runs every core's instructions on every part). */
static const char *lacking_instruction(int lacks, uint16_t op)
{
	if (lacks & LACKS_MUL) {
		if ((op & 0xFC00) == 0x9C00)
			return "MUL";
		if ((op & 0xFF00) == 0x0200)
			return "MULS";
		if ((op & 0xFF00) == 0x0300)
			return "MULSU or FMUL";
	}
	if ((lacks & LACKS_JMP_CALL) && (op & 0xFE0C) == 0x940C)
		return "JMP or CALL";
	return NULL;
}

/* The AVR manual leaves LD/ST with a pointer's own register and that pointer incremented or
 * decremented undefined (LD r26, X+; ST -Y, r29; LPM r30, Z+): simavr gives one answer, a part
 * may give another.  Returns the pointer's name, or NULL. */
static const char *undefined_combination(uint16_t op)
{
	if ((op & 0xFC00) != 0x9000)
		return NULL;
	int d = (op >> 4) & 0x1F, store = op & 0x0200;
	switch (op & 0xF) {
	case 0x1: case 0x2: return d >= 30 ? "Z" : NULL;
	case 0x5: case 0x7: return !store && d >= 30 ? "Z" : NULL; /* LPM/ELPM Rd, Z+ */
	case 0x9: case 0xA: return d == 28 || d == 29 ? "Y" : NULL;
	case 0xD: case 0xE: return d == 26 || d == 27 ? "X" : NULL;
	}
	return NULL;
}

/* the mask of bits up to the highest set in v: what a register that holds v must implement */
static uint8_t implemented_bits(uint32_t v)
{
	uint8_t m = 0;
	while (m < v)
		m = (uint8_t)(m << 1 | 1);
	return m;
}

/* What op does to the part beyond the call, if it is one of the instructions that reach past
 * registers and memory (SLEEP is caught by simavr's state). */
static const char *system_instruction(uint16_t op)
{
	switch (op) {
	case 0x95A8: return "WDR, which resets the caller's watchdog timer";
	case 0x9598: return "BREAK, which stops the part under a debugger";
	case 0x95E8: case 0x95F8: return "SPM, which writes program memory";
	}
	return NULL;
}

typedef struct {
	const char *err;
	char errbuf[400];
	uint64_t abi, core;
	uint32_t minsp;
	long long ninstr;
	int irq_taken, i_entry;
	long irq_sp;
} result_t;

/* An encoding simavr 1.6 runs other than the part does: BLD, BST, SBRC, SBRS with bit 3 set
 * (reserved; simavr ignores the bit), and a skip over ADIW or SBIW with K & 0xC == 0xC, which
 * simavr's two-word test (op & 0xfc0f == 0x940c..f) takes for a 2-word instruction and skips
 * with the word after it. */
static const char *simulator_gap(avr_t *avr, uint16_t op, uint32_t pc)
{
	if ((op & 0xF808) == 0xF808)
		return "a reserved encoding (BLD, BST, SBRC or SBRS with bit 3 set)";
	int skip = (op & 0xFC00) == 0x1000 || (op & 0xFC08) == 0xFC00 || (op & 0xFD00) == 0x9900;
	if (skip && (flash16(avr, pc + 2) & 0xFE0C) == 0x960C)
		return "a skip over ADIW or SBIW with an immediate of 12 to 15 mod 16, which the "
		       "simulator skips as a 2-word instruction (the part skips one word): use another "
		       "immediate or no skip there";
	return NULL;
}

/* Whether op at pc may not run: the part lacks it, the AVR leaves it undefined, it reaches
 * past the call, or the simulator would run it otherwise (the reason goes to r->err). */
static int refused_instruction(avr_t *avr, int lacks, uint16_t op, uint32_t pc, result_t *r)
{
	const char *why; /* each looked up only if the one before found nothing: a hot path */
	if ((why = lacking_instruction(lacks, op)))
		snprintf(r->errbuf, sizeof r->errbuf, "executes %s at PC=0x%x, which this part "
			 "does not have", why, pc);
	else if ((why = undefined_combination(op)))
		snprintf(r->errbuf, sizeof r->errbuf, "executes 0x%04x at PC=0x%x, a load or store "
			 "through %s, incremented or decremented, of one of %s's own registers: "
			 "undefined on the AVR", op, pc, why, why);
	else if ((why = system_instruction(op)))
		snprintf(r->errbuf, sizeof r->errbuf, "executes %s, at PC=0x%x", why, pc);
	else if ((why = simulator_gap(avr, op, pc)))
		snprintf(r->errbuf, sizeof r->errbuf, "executes 0x%04x at PC=0x%x, %s", op, pc, why);
	else
		return 0;
	r->err = r->errbuf;
	return 1;
}

typedef struct {
	uint32_t entry, done, harness_end, filler, codeend, vec_addr, vec_end, ramstart, ramend,
		sptop_default;
	uint8_t sph_mask, rampz_mask; /* the bits of SPH and RAMPZ the part implements */
	int lacks; /* LACKS_* bits: instructions the part does not have */
	long long core_begin, core_end;
	uint64_t max_cycles;
	int nops, asz;
	uint32_t rmax, opmax[8];
	avr_t *avr;
	avr_int_vector_t *vec;
	uint8_t *bad_seen;
	long long *wrote, *clobbered, *exposed;
	uint64_t *prof; /* cycles per instruction word of the core, for FLAG_PROFILE */
} host_t;

typedef struct {
	uint32_t rlen, sptop, r_addr, op_addr[8], oplen[8];
	uint32_t ret_pc; /* where the routine returns to (byte address) */
	long long irq_at;
	uint64_t seed;
	int flags, nints;
	uint8_t sreg;
	long long ints[8];
	uint8_t *opbuf[8];
} call_t;

static void read_call(host_t *h, call_t *c)
{
	c->rlen = next_num();
	c->irq_at = next_num();
	c->seed = next_num();
	c->flags = next_num();
	c->sreg = next_num();
	c->sptop = next_num();
	c->r_addr = next_num();
	for (int i = 0; i < h->nops; i++)
		c->op_addr[i] = next_num();
	c->nints = next_num();
	if (c->nints < 0 || c->nints > 8)
		fatal("too many integer arguments (at most 8)");
	for (int i = 0; i < c->nints; i++)
		c->ints[i] = next_num();
	for (int i = 0; i < h->nops; i++) {
		char *hx = next_token();
		c->oplen[i] = 0;
		if (strcmp(hx, "-") != 0) {
			size_t hl = strlen(hx) / 2;
			if (hl > h->opmax[i])
				fatal("operand longer than announced");
			for (size_t k = 0; k < hl; k++)
				c->opbuf[i][k] = hexval(hx[2 * k]) << 4 | hexval(hx[2 * k + 1]);
			c->oplen[i] = hl;
		}
	}
	if (c->rlen > h->rmax)
		fatal("result longer than announced");
}

/* the default layout: guard, r, guard, a, guard, b, guard ... stack at the top */
static void default_layout(host_t *h, call_t *c)
{
	if (c->r_addr)
		return;
	c->r_addr = h->ramstart + GUARD;
	uint32_t p = c->r_addr + h->rmax + GUARD;
	for (int i = 0; i < h->nops; i++) {
		c->op_addr[i] = p;
		p += h->opmax[i] + GUARD;
	}
	if (!c->sptop)
		c->sptop = h->sptop_default;
}

/* where the buffers end (the stack must lie above), or a fatal error if they do not fit */
static uint32_t check_layout(host_t *h, call_t *c)
{
	uint32_t end = c->r_addr + c->rlen + GUARD;
	int ok = c->r_addr >= h->ramstart + GUARD && c->sptop <= h->ramend;
	for (int i = 0; i < h->nops; i++) {
		ok = ok && c->op_addr[i] >= h->ramstart + GUARD;
		if (c->op_addr[i] + c->oplen[i] + GUARD > end)
			end = c->op_addr[i] + c->oplen[i] + GUARD;
	}
	if (!ok || end + HANDLER_ROOM > c->sptop) {
		char msg[256];
		snprintf(msg, sizeof msg, "the buffers and stack do not fit SRAM 0x%x..0x%x (buffers "
			 "end at 0x%x, stack top 0x%x)", h->ramstart, h->ramend, end, c->sptop);
		fatal(msg);
	}
	return end;
}

static void start_state(host_t *h, call_t *c)
{
	avr_t *avr = h->avr;
	avr_interrupt_reset(avr);
	rng_state = 0x9E3779B97F4A7C15ULL ^ (c->seed * 0xD1B54A32D192ED03ULL);
	if (!rng_state)
		rng_state = 1;
	if (c->flags & FLAG_RANDOM_RAM) {
		for (uint32_t a = h->ramstart; a <= h->ramend; a++)
			avr->data[a] = rng8();
	} else {
		memset(avr->data + h->ramstart, 0, h->ramend - h->ramstart + 1);
		for (uint32_t i = 0; i < c->rlen; i++)
			avr->data[c->r_addr + i] = (uint8_t)(0xC3 ^ (i * 0x1D));
	}
	for (int i = 0; i < h->nops; i++)
		memcpy(avr->data + c->op_addr[i], c->opbuf[i], c->oplen[i]);
	for (int i = 0; i < 32; i++)
		avr->data[i] = rng8();
	avr->data[1] = 0;
	int argreg = 24;
	uint32_t ptrs[9];
	ptrs[0] = c->r_addr;
	for (int i = 0; i < h->nops; i++)
		ptrs[i + 1] = c->op_addr[i];
	for (int i = 0; i <= h->nops && argreg >= 8; i++, argreg -= 2) {
		avr->data[argreg] = ptrs[i] & 0xff;
		avr->data[argreg + 1] = ptrs[i] >> 8;
	}
	for (int i = 0; i < c->nints && argreg >= 8; i++, argreg -= 2) {
		avr->data[argreg] = c->ints[i] & 0xff;
		avr->data[argreg + 1] = (c->ints[i] >> 8) & 0xff;
	}
	sp_set(avr, c->sptop);
	/* enabled long before the call: no SEI shadow */
	sreg_set(avr, c->irq_at >= 0 ? (c->sreg | 0x80) : c->sreg);
	avr->interrupt_state = 0;
	avr->pc = h->entry;
	avr->state = cpu_Running;
	saw_invalid_opcode = 0;
	c->ret_pc = h->done;
	if (!(c->flags & FLAG_RANDOM_RAM))
		return;
	if (avr->rampz) /* only the bits that address the part's flash */
		avr->data[avr->rampz] = rng8() & h->rampz_mask;
	uint32_t past = (h->codeend + 1) & ~1u, words = (avr->flashend + 1 - past) / 2;
	if (past <= avr->flashend && words > 1) {
		uint32_t pick = rng8();
		pick |= (uint32_t)rng8() << 8;
		pick |= (uint32_t)rng8() << 16;
		c->ret_pc = past + 2 * (pick % words);
	}
}

/* the return address the harness CALL just pushed below the caller's SP (high byte lowest),
 * replaced by the call's ret_pc */
static void set_return_address(host_t *h, call_t *c)
{
	uint32_t word = c->ret_pc >> 1;
	for (int i = 0; i < h->asz; i++, word >>= 8)
		h->avr->data[c->sptop - i] = word & 0xff;
}

/* whether the routine runs where no code of its own is: past the program, in the vector table
 * (address 0 restarts the part) or in the harness's filler (an ICALL without EIND on a part
 * over 128 KB lands there: ICALL and IJMP reach only its first 128 KB) */
static int jumped_astray(host_t *h, uint32_t pc, result_t *r)
{
	const char *where = NULL, *why = "";
	if (pc + 2 > h->codeend) {
		where = "outside the program";
	} else if (pc < h->vec_end) {
		where = "into the vector table";
		why = pc ? "" : ", the reset vector: the part restarts";
	} else if (pc >= h->filler && pc < h->harness_end) {
		where = "into flash below its own code";
		why = ": on a part over 128 KB ICALL and IJMP reach only the first 128 KB (EICALL "
		      "with EIND, or the linker's gs() stub)";
	}
	if (!where)
		return 0;
	snprintf(r->errbuf, sizeof r->errbuf, "jumped %s (PC=0x%x%s)", where, pc, why);
	r->err = r->errbuf;
	return 1;
}

/* one step of the routine (or of the handler of a requested interrupt); returns 0 to go on */
static int step(host_t *h, call_t *c, trace_t *t, result_t *r, int *in_isr, int *irq_raised,
		long long *cb_cycle, long long *ce_cycle, uint8_t en_saved)
{
	avr_t *avr = h->avr;
	uint32_t pc = avr->pc;
	int leaving_isr = 0, i_before = avr->sreg[S_I];
	if (*in_isr) {
		if (pc >= h->codeend) {
			r->err = "interrupt handler jumped outside the program";
			return 1;
		}
		leaving_isr = flash16(avr, pc) == 0x9518;
	} else {
		if (pc == c->ret_pc)
			return 1;
		if (pc == (uint32_t)h->core_begin || pc == (uint32_t)h->core_end) {
			int begin = pc == (uint32_t)h->core_begin;
			long long *at = begin ? cb_cycle : ce_cycle;
			if (*at >= 0 || (!begin && *cb_cycle < 0)) {
				r->err = begin ? "passes core_begin twice: the core is timed once" :
					 *at >= 0 ? "passes core_end twice: the core is timed once" :
					 "reaches core_end before core_begin";
				return 1;
			}
			*at = avr->cycle;
		}
		if (jumped_astray(h, pc, r))
			return 1;
		uint16_t op = flash16(avr, pc);
		if (refused_instruction(avr, h->lacks, op, pc, r))
			return 1;
		t->pc_hash = (t->pc_hash ^ pc) * FNV_PRIME;
		t->sp = sp_get(avr);
		t->now = r->ninstr + 1;
		/* sample SP where it is settled: not between the writes of its two halves */
		if (!t->sp_pending && t->sp < r->minsp)
			r->minsp = t->sp;
		t->outside_core = h->core_begin >= 0 && !(*cb_cycle >= 0 && *ce_cycle < 0);
		trace_mem(avr, t, pc, op, h->asz);
		if (t->core_gap[0]) {
			r->err = t->core_gap;
			return 1;
		}
	}
	if (avr->cycle - r->abi > h->max_cycles) {
		snprintf(r->errbuf, sizeof r->errbuf, "timeout after %llu cycles: the routine does not "
			 "return", (unsigned long long)(avr->cycle - r->abi));
		r->err = r->errbuf;
		return 1;
	}
	/* request the interrupt so that it is taken at the boundary after instruction irq_at
	 * (the harness CALL is instruction 0) */
	if (c->irq_at >= 0 && !*irq_raised && !*in_isr && r->ninstr + 1 >= c->irq_at) {
		*irq_raised = 1;
		avr->data[IRQ_ENABLE_ADDR] = en_saved | 1;
		avr_raise_interrupt(avr, h->vec);
	}
	uint64_t before = avr->cycle;
	/* the core only, or the whole call where the routine marks no core */
	int profiled = (c->flags & FLAG_PROFILE) && !*in_isr &&
		       (h->core_begin < 0 || (*cb_cycle >= 0 && *ce_cycle < 0));
	avr_run(avr);
	/* the bits a part does not implement read 0 (simavr keeps all eight) */
	avr->data[IO_SPH] &= h->sph_mask;
	if (avr->rampz)
		avr->data[avr->rampz] &= h->rampz_mask;
	if (profiled)
		h->prof[pc >> 1] += avr->cycle - before;
	/* each instruction's cycles too: a branch to the next instruction (BRCS .+0) keeps the
	 * PC trace and the total, but delays what follows by the data */
	if (!*in_isr)
		t->pc_hash = (t->pc_hash ^ (avr->cycle - before)) * FNV_PRIME;
	/* simavr lets two instructions run after I is set before a pending interrupt is taken;
	 * the hardware runs exactly one. */
	if (avr->interrupt_state < 0)
		avr->interrupt_state = avr_has_pending_interrupts(avr) ? 1 : 0;
	if (saw_invalid_opcode) {
		snprintf(r->errbuf, sizeof r->errbuf, "invalid opcode at PC=0x%x", pc);
		r->err = r->errbuf;
		return 1;
	}
	if (avr->state != cpu_Running) {
		snprintf(r->errbuf, sizeof r->errbuf,
			 avr->state == cpu_Sleeping || avr->state == cpu_Done
				 ? "executed SLEEP at PC=0x%x" : "simulator crashed at PC=0x%x", pc);
		r->err = r->errbuf;
		return 1;
	}
	if (*in_isr) {
		if (leaving_isr)
			*in_isr = 0;
		return 0;
	}
	r->ninstr++;
	if (r->ninstr == 0 && c->ret_pc != h->done) /* the harness CALL has run */
		set_return_address(h, c);
	if (!t->sp_pending) { /* (SPH written first may put SP a page off until SPL follows) */
		track_exposure(t, t->settled_sp, sp_get(avr), h->ramend);
		t->settled_sp = sp_get(avr);
	}
	/* the caller's interrupts stay off until the return (the I flag at the return alone would
	 * miss an SEI undone before it) */
	if (avr->sreg[S_I] && !r->i_entry)
		set_hazard(t, "interrupts enabled at instruction %lld though the caller had them "
			   "disabled", r->ninstr);
	if (*irq_raised && !r->irq_taken && avr->pc == h->vec_addr) {
		r->irq_taken = 1;
		r->irq_sp = (long)sp_get(avr) + h->asz;
		*in_isr = 1;
		avr->data[IRQ_ENABLE_ADDR] = en_saved;
		return 0;
	}
	/* an interrupt can be taken here if I was set before the instruction and still is (an
	 * instruction that sets I delays interrupts by one more instruction) */
	if (avr->sreg[S_I] && i_before && avr->pc != c->ret_pc) {
		t->boundaries++;
		t->last_boundary = r->ninstr;
		if (!t->sp_pending && sp_get(avr) < r->minsp) /* a dip between OUTs counts here */
			r->minsp = sp_get(avr);
		if (t->sp_pending)
			set_hazard(t, "SP half-written after instruction %lld with interrupts enabled "
				   "(SPL and SPH set by separate writes)", r->ninstr);
		else if (sp_get(avr) > t->s0)
			set_hazard(t, "SP is 0x%04x after instruction %lld with interrupts enabled, above "
				   "the caller's 0x%04x: an interrupt there overwrites the caller's stack",
				   sp_get(avr), r->ninstr, t->s0);
		if (c->flags & FLAG_ISR_MODEL)
			isr_at_boundary(avr, t, h->vec_addr, h->ramend, IRQ_ENABLE_ADDR);
	}
	return 0;
}

static void run_call(host_t *h, call_t *c, trace_t *t, result_t *r)
{
	avr_t *avr = h->avr;
	uint8_t en_saved = avr->data[IRQ_ENABLE_ADDR];
	long long cb_cycle = -1, ce_cycle = -1;
	int in_isr = 0, irq_raised = 0;
	r->err = NULL;
	r->abi = avr->cycle;
	r->minsp = c->sptop;
	r->ninstr = -1; /* the harness CALL is not counted */
	r->irq_taken = 0;
	r->irq_sp = -1;
	r->i_entry = avr->sreg[S_I];
	while (!step(h, c, t, r, &in_isr, &irq_raised, &cb_cycle, &ce_cycle, en_saved))
		;
	avr->data[IRQ_ENABLE_ADDR] = en_saved;
	uint64_t c_end = avr->cycle;
	if (!r->err && r->minsp < t->buf_end) {
		snprintf(r->errbuf, sizeof r->errbuf,
			 "stack overflowed into the operand buffers (SP reached 0x%x)", r->minsp);
		r->err = r->errbuf;
	}
	if (!r->err && h->core_begin >= 0 && (cb_cycle < 0 || ce_cycle < 0))
		r->err = "core_begin/core_end symbols were not both reached";
	uint64_t abi = c_end - r->abi;
	r->core = (h->core_begin >= 0 && cb_cycle >= 0 && ce_cycle >= 0)
		? (uint64_t)(ce_cycle - cb_cycle) : abi;
	r->abi = abi;
}

/* a message as a JSON string, or null when empty (messages hold no quotes or backslashes) */
static void json_text(const char *msg)
{
	if (msg[0])
		fprintf(out, "\"%s\"", msg);
	else
		fprintf(out, "null");
}

static void print_result(host_t *h, call_t *c, trace_t *t, result_t *r, const uint8_t *saved)
{
	static const int cs_regs[] = {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 28, 29};
	avr_t *avr = h->avr;
	int cs_ok = 1, clob[18], nclob = 0;
	for (int i = 0; i < 18; i++)
		if (avr->data[cs_regs[i]] != saved[cs_regs[i]]) {
			cs_ok = 0;
			clob[nclob++] = cs_regs[i];
		}
	int inputs_ok = 1;
	for (int i = 0; i < h->nops; i++)
		if (memcmp(avr->data + c->op_addr[i], c->opbuf[i], c->oplen[i]))
			inputs_ok = 0;
	long long depth = (long long)c->sptop - r->minsp - h->asz;
	fprintf(out, "{\"result\": \"");
	for (uint32_t i = 0; i < c->rlen; i++)
		fprintf(out, "%02x", avr->data[c->r_addr + i]);
	fprintf(out,
		"\", \"abi_cycles\": %llu, \"core_cycles\": %llu, \"stack_depth\": %lld, "
		"\"pc_digest\": \"%016llx\", \"addr_digest\": \"%016llx\", "
		"\"instructions\": %lld, \"callee_saved_ok\": %s, \"r1_zero\": %s, "
		"\"sp_ok\": %s, \"i_flag_ok\": %s, \"inputs_unmodified\": %s, \"irq_taken\": %s, "
		"\"irq_sp\": %ld, \"r_addr\": %u, \"sp_top\": %u, \"bad_writes\": [",
		(unsigned long long)r->abi, (unsigned long long)r->core, depth < 0 ? 0 : depth,
		(unsigned long long)t->pc_hash, (unsigned long long)t->addr_hash,
		r->ninstr < 0 ? 0 : r->ninstr, cs_ok ? "true" : "false",
		avr->data[1] == 0 ? "true" : "false", sp_get(avr) == c->sptop ? "true" : "false",
		avr->sreg[S_I] == r->i_entry ? "true" : "false", inputs_ok ? "true" : "false",
		r->irq_taken ? "true" : "false", r->irq_sp, c->r_addr, c->sptop);
	for (int i = 0; i < t->nbad; i++)
		fprintf(out, "%s%u", i ? ", " : "", t->bad[i]);
	fprintf(out, "], \"io_writes\": [");
	for (int i = 0; i < t->nio; i++)
		fprintf(out, "%s%u", i ? ", " : "", t->io[i]);
	fprintf(out, "], \"clobbered_regs\": [");
	for (int i = 0; i < nclob; i++)
		fprintf(out, "%s%d", i ? ", " : "", clob[i]);
	fprintf(out, "], \"hazard\": ");
	json_text(t->hazard);
	fprintf(out, ", \"bad_read\": ");
	json_text(t->bad_read);
	if (c->flags & FLAG_PROFILE) {
		fprintf(out, ", \"profile\": [");
		for (uint32_t w = 0, first = 1; w < h->codeend / 2; w++)
			if (h->prof[w]) {
				fprintf(out, "%s[%u, %llu]", first ? "" : ", ", 2 * w,
					(unsigned long long)h->prof[w]);
				h->prof[w] = 0;
				first = 0;
			}
		fprintf(out, "]");
	}
	if (r->err)
		fprintf(out, ", \"error\": \"%s\"}\n", r->err);
	else
		fprintf(out, ", \"error\": null}\n");
}

static void read_input(void)
{
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
	if (!magic || strcmp(magic, "AVRMP6"))
		fatal("bad input header from the Python driver");
}

static void setup(host_t *h, const char *elf, const char *mcu, const char *top)
{
	static elf_firmware_t fw;
	static avr_int_vector_t vec;
	h->entry = next_num();
	h->done = next_num();
	h->vec_end = next_num();
	h->harness_end = next_num();
	h->filler = next_num();
	h->core_begin = next_num();
	h->core_end = next_num();
	h->max_cycles = next_num();
	h->lacks = next_num();
	h->nops = 0;
	memset(&fw, 0, sizeof fw);
	if (elf_read_firmware(elf, &fw) != 0)
		fatal("simavr could not read the firmware ELF");
	h->avr = avr_make_mcu_by_name(mcu);
	if (!h->avr)
		fatal("simavr does not know this MCU; see simavr --list-cores");
	avr_init(h->avr);
	h->avr->log = 0;
	avr_load_firmware(h->avr, &fw);
	h->avr->log = 0;
	h->ramstart = h->avr->ioend + 1;
	h->ramend = h->avr->ramend;
	/* The caller's SP (default RAMEND); a top with a small low byte makes a frame cross a
	 * 256-byte boundary, so a non-atomic update of SPH/SPL becomes visible to interrupts. */
	h->sptop_default = top ? (uint32_t)strtoul(top, NULL, 0) : h->ramend;
	if (h->sptop_default > h->ramend)
		fatal("stack top above RAMEND");
	h->asz = h->avr->address_size ? h->avr->address_size : 2;
	h->codeend = fw.flashbase + fw.flashsize;
	h->vec_addr = IRQ_VECTOR * h->avr->vector_size;
	h->sph_mask = implemented_bits(h->ramend >> 8);
	h->rampz_mask = implemented_bits(h->avr->flashend >> 16);
	memset(&vec, 0, sizeof vec);
	vec.vector = IRQ_VECTOR;
	vec.enable.reg = IRQ_ENABLE_ADDR;
	vec.enable.bit = 0;
	vec.enable.mask = 1;
	avr_register_vector(h->avr, &vec);
	h->vec = &vec;
	h->bad_seen = calloc(1 << 16, 1);
	h->wrote = calloc(1 << 16, sizeof(long long));
	h->clobbered = calloc(1 << 16, sizeof(long long));
	h->exposed = malloc((1 << 16) * sizeof(long long));
	h->prof = calloc(h->codeend / 2 + 1, sizeof(uint64_t));
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
	read_input();
	host_t h;
	setup(&h, argv[1], argv[2], argc == 4 ? argv[3] : NULL);
	long ncalls = next_num();
	h.nops = next_num();
	h.rmax = next_num();
	if (h.nops < 0 || h.nops > 8)
		fatal("too many operand buffers (at most 8)");
	for (int i = 0; i < h.nops; i++)
		h.opmax[i] = next_num();
	fprintf(out, "{\"layout\": {\"ramstart\": %u, \"ramend\": %u, \"address_size\": %d, "
		"\"vector_size\": %d}}\n", h.ramstart, h.ramend, h.asz, h.avr->vector_size);

	call_t c;
	for (int i = 0; i < h.nops; i++)
		c.opbuf[i] = malloc(h.opmax[i] + 1);
	for (long k = 0; k < ncalls; k++) {
		read_call(&h, &c);
		default_layout(&h, &c);
		trace_t t;
		memset(&t, 0, sizeof t);
		t.pc_hash = FNV_OFFSET;
		t.addr_hash = FNV_OFFSET;
		t.s0 = c.sptop;
		t.r_lo = c.r_addr;
		t.r_hi = c.r_addr + c.rlen;
		t.nops = h.nops;
		for (int i = 0; i < h.nops; i++) {
			t.op_lo[i] = c.op_addr[i];
			t.op_hi[i] = c.op_addr[i] + c.oplen[i];
		}
		t.buf_end = check_layout(&h, &c);
		t.bad_seen = h.bad_seen;
		t.wrote = h.wrote;
		t.clobbered = h.clobbered;
		t.exposed = h.exposed;
		t.settled_sp = c.sptop;
		t.rampz = h.avr->rampz;
		t.own_flash[0] = h.vec_end;
		t.own_flash[1] = h.entry;
		t.own_flash[2] = h.harness_end;
		t.own_flash[3] = h.codeend;
		memset(h.wrote, 0, (h.ramend + 1) * sizeof(long long)); /* SRAM is all they mark */
		memset(h.clobbered, 0, (h.ramend + 1) * sizeof(long long));
		memset(h.exposed, 0xff, (h.ramend + 1) * sizeof(long long)); /* -1: none exposed */
		start_state(&h, &c);
		uint8_t saved[32];
		memcpy(saved, h.avr->data, 32);
		result_t r;
		run_call(&h, &c, &t, &r);
		print_result(&h, &c, &t, &r, saved);
		for (int i = 0; i < t.nbad; i++)
			h.bad_seen[t.bad[i]] = 0;
		/* addresses beyond MAX_BAD stay flagged: clear the whole map in that rare case */
		if (t.nbad >= MAX_BAD)
			memset(h.bad_seen, 0, 1 << 16);
		if (r.err && strstr(r.err, "timeout"))
			break; /* a routine that hangs: the rest of the batch would too */
	}
	fflush(out);
	return 0;
}
