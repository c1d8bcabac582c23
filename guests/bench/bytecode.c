/*
 * bytecode.c - a small stack-machine bytecode interpreter running a loop
 * program, with two dispatch schemes: a switch in a loop (one shared
 * indirect jump through a jump table) and direct threading with computed
 * goto (an indirect jump at the end of every handler).
 *
 * Stresses: indirect-jump dispatch (the guest's jump targets change every
 * few instructions, so a translator must look them up quickly), short
 * handler blocks, a memory-resident operand stack, bytecode calls/returns.
 *
 * The program (locals i, n, x, y, z):
 *     while (i < n) {
 *         x = x * 1103515245 + 12345;  t = (x >> 16) & 1023;
 *         if (t & 1) y += t; else y ^= t << 3;
 *         call mix;                    // z = (z ^ y) * 31 + i
 *         i++;
 *     }
 * about 33 bytecode instructions per trip.
 *
 * Usage: bytecode [N]   N runs of the program with n = 20000 trips and a
 * seed derived from the run number, once per dispatch scheme (default
 * 550).  Self-check, every run: both interpreters end with the same x, y,
 * z as the same loop written in C.
 */
#include "bench.h"

#define TRIPS 20000u
#define DEFAULT_ITERS 550

enum op {
	OP_HALT, OP_PUSH, OP_LOAD, OP_STORE, OP_INC, OP_ADD, OP_SUB, OP_MUL, OP_AND, OP_OR,
	OP_XOR, OP_SHL, OP_SHR, OP_DUP, OP_DROP, OP_SWAP, OP_LT, OP_JMP, OP_JZ, OP_JNZ,
	OP_CALL, OP_RET, OP_COUNT
};

enum { V_I, V_N, V_X, V_Y, V_Z, V_COUNT };

static int32_t code[256];
static uint32_t ncode;

static uint32_t emit(int32_t w)
{
	code[ncode] = w;
	return ncode++;
}

static void patch(uint32_t at, uint32_t target) { code[at] = (int32_t)target; }

static uint32_t mix_entry;

static void assemble(void)
{
	uint32_t loop, jz_end, jz_even, jmp_next, even, next, call_mix;

	loop = ncode;
	emit(OP_LOAD); emit(V_I); emit(OP_LOAD); emit(V_N); emit(OP_LT);
	emit(OP_JZ); jz_end = emit(0);
	emit(OP_LOAD); emit(V_X); emit(OP_PUSH); emit(1103515245); emit(OP_MUL);
	emit(OP_PUSH); emit(12345); emit(OP_ADD); emit(OP_STORE); emit(V_X);
	emit(OP_LOAD); emit(V_X); emit(OP_SHR); emit(16); emit(OP_PUSH); emit(1023); emit(OP_AND);
	emit(OP_DUP); emit(OP_PUSH); emit(1); emit(OP_AND); emit(OP_JZ); jz_even = emit(0);
	emit(OP_LOAD); emit(V_Y); emit(OP_ADD); emit(OP_STORE); emit(V_Y);
	emit(OP_JMP); jmp_next = emit(0);
	even = ncode;
	emit(OP_SHL); emit(3); emit(OP_LOAD); emit(V_Y); emit(OP_XOR); emit(OP_STORE); emit(V_Y);
	next = ncode;
	emit(OP_CALL); call_mix = emit(0);
	emit(OP_INC); emit(V_I);
	emit(OP_JMP); emit((int32_t)loop);
	patch(jz_end, ncode);
	emit(OP_HALT);
	mix_entry = ncode;
	emit(OP_LOAD); emit(V_Z); emit(OP_LOAD); emit(V_Y); emit(OP_XOR);
	emit(OP_PUSH); emit(31); emit(OP_MUL); emit(OP_LOAD); emit(V_I); emit(OP_ADD);
	emit(OP_STORE); emit(V_Z); emit(OP_RET);
	patch(jz_even, even);
	patch(jmp_next, next);
	patch(call_mix, mix_entry);
}

/* returns the number of bytecode instructions executed */
static __attribute__((noinline)) uint32_t run_switch(const int32_t *prog, uint32_t *v)
{
	uint32_t stack[64], *sp = stack, a, executed = 0;
	const int32_t *rstack[16], **rsp = rstack, *pc = prog;

	for (;;) {
		executed++;
		switch (*pc++) {
		case OP_HALT: return executed;
		case OP_PUSH: *sp++ = (uint32_t)*pc++; break;
		case OP_LOAD: *sp++ = v[*pc++]; break;
		case OP_STORE: v[*pc++] = *--sp; break;
		case OP_INC: v[*pc++]++; break;
		case OP_ADD: a = *--sp; sp[-1] += a; break;
		case OP_SUB: a = *--sp; sp[-1] -= a; break;
		case OP_MUL: a = *--sp; sp[-1] *= a; break;
		case OP_AND: a = *--sp; sp[-1] &= a; break;
		case OP_OR: a = *--sp; sp[-1] |= a; break;
		case OP_XOR: a = *--sp; sp[-1] ^= a; break;
		case OP_SHL: sp[-1] <<= *pc++ & 31; break;
		case OP_SHR: sp[-1] >>= *pc++ & 31; break;
		case OP_DUP: sp[0] = sp[-1]; sp++; break;
		case OP_DROP: sp--; break;
		case OP_SWAP: a = sp[-1]; sp[-1] = sp[-2]; sp[-2] = a; break;
		case OP_LT: a = *--sp; sp[-1] = sp[-1] < a; break;
		case OP_JMP: pc = prog + *pc; break;
		case OP_JZ: pc = *--sp ? pc + 1 : prog + *pc; break;
		case OP_JNZ: pc = *--sp ? prog + *pc : pc + 1; break;
		case OP_CALL: *rsp++ = pc + 1; pc = prog + *pc; break;
		case OP_RET: pc = *--rsp; break;
		default: return 0;
		}
	}
}

static __attribute__((noinline)) uint32_t run_threaded(const int32_t *prog, uint32_t *v)
{
	static void *const labels[OP_COUNT] = {
		&&l_halt, &&l_push, &&l_load, &&l_store, &&l_inc, &&l_add, &&l_sub, &&l_mul,
		&&l_and, &&l_or, &&l_xor, &&l_shl, &&l_shr, &&l_dup, &&l_drop, &&l_swap, &&l_lt,
		&&l_jmp, &&l_jz, &&l_jnz, &&l_call, &&l_ret,
	};
	uint32_t stack[64], *sp = stack, a, executed = 0;
	const int32_t *rstack[16], **rsp = rstack, *pc = prog;

#define NEXT do { executed++; goto *labels[*pc++]; } while (0)
	NEXT;
l_halt: return executed;
l_push: *sp++ = (uint32_t)*pc++; NEXT;
l_load: *sp++ = v[*pc++]; NEXT;
l_store: v[*pc++] = *--sp; NEXT;
l_inc: v[*pc++]++; NEXT;
l_add: a = *--sp; sp[-1] += a; NEXT;
l_sub: a = *--sp; sp[-1] -= a; NEXT;
l_mul: a = *--sp; sp[-1] *= a; NEXT;
l_and: a = *--sp; sp[-1] &= a; NEXT;
l_or: a = *--sp; sp[-1] |= a; NEXT;
l_xor: a = *--sp; sp[-1] ^= a; NEXT;
l_shl: sp[-1] <<= *pc++ & 31; NEXT;
l_shr: sp[-1] >>= *pc++ & 31; NEXT;
l_dup: sp[0] = sp[-1]; sp++; NEXT;
l_drop: sp--; NEXT;
l_swap: a = sp[-1]; sp[-1] = sp[-2]; sp[-2] = a; NEXT;
l_lt: a = *--sp; sp[-1] = sp[-1] < a; NEXT;
l_jmp: pc = prog + *pc; NEXT;
l_jz: pc = *--sp ? pc + 1 : prog + *pc; NEXT;
l_jnz: pc = *--sp ? prog + *pc : pc + 1; NEXT;
l_call: *rsp++ = pc + 1; pc = prog + *pc; NEXT;
l_ret: pc = *--rsp; NEXT;
#undef NEXT
}

static void reference(uint32_t *v)
{
	uint32_t i, t;

	for (i = v[V_I]; i < v[V_N]; i++) {
		v[V_X] = v[V_X] * 1103515245u + 12345u;
		t = (v[V_X] >> 16) & 1023;
		if (t & 1)
			v[V_Y] += t;
		else
			v[V_Y] ^= t << 3;
		v[V_Z] = (v[V_Z] ^ v[V_Y]) * 31 + i;
	}
	v[V_I] = i;
}

static void init_vars(uint32_t *v, uint32_t it)
{
	v[V_I] = 0;
	v[V_N] = TRIPS;
	v[V_X] = 0x1234567u ^ (it * 2654435761u);
	v[V_Y] = 0;
	v[V_Z] = it;
}

int main(int argc, char **argv)
{
	uint32_t n = bench_iters(argc, argv, DEFAULT_ITERS), it, sum = 0, ins = 0;
	uint32_t vs[V_COUNT], vt[V_COUNT], vr[V_COUNT];

	assemble();
	for (it = 0; it < n; it++) {
		uint32_t e1, e2;

		init_vars(vs, it);
		init_vars(vt, it);
		init_vars(vr, it);
		e1 = run_switch(code, vs);
		e2 = run_threaded(code, vt);
		reference(vr);
		if (e1 != e2 || memcmp(vs, vr, sizeof vr) || memcmp(vt, vr, sizeof vr))
			bench_fail("bytecode", "interpreters disagree with the C reference", it);
		ins += e1 + e2;
		sum = bench_mix(sum, vr[V_X] ^ vr[V_Y] ^ vr[V_Z]);
	}
	printf("bytecode: %u x %u trips, %u bytecodes executed, checksum %08x\n", n, TRIPS, ins,
	       sum);
	return 0;
}
