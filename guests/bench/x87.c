/*
 * x87.c - a gravitational n-body simulation in double precision on the
 * x87 FPU: a star and four planets (G = 1), symplectic Euler steps.
 *
 * Stresses: x87 arithmetic (fadd/fmul/fdiv/fsqrt), the register stack
 * (fxch, loads/stores of doubles between steps) and 80-bit intermediate
 * precision; a translator has to keep the FPU stack and precision exact.
 *
 * Usage: x87 [N]   N x 1000 time steps of dt = 0.001 (default 6000).
 * Prints the energy (in units of 1e-4) before and after and the position
 * of the inner planet, rounded to 9 decimals.  Self-check: the relative
 * energy drift stays below 1e-4 (there are no close encounters, so a
 * broken FPU shows up as a drift).
 */
#include "bench.h"

#define BODIES 5
#define STEPS_PER_ITER 1000
#define DT 0.001
#define DEFAULT_ITERS 6000

struct body {
	double x, y, z, vx, vy, vz, m;
};

static struct body b[BODIES];

static void setup(void)
{
	static const double radius[BODIES - 1] = { 1.0, 1.6, 2.5, 4.2 };
	static const double mass[BODIES - 1] = { 3e-4, 1e-4, 5e-4, 2e-4 };
	double px = 0, py = 0, pz = 0;
	int i;

	b[0].m = 1.0;
	for (i = 1; i < BODIES; i++) {
		double r = radius[i - 1], v = x87_sqrt(b[0].m / r);

		b[i].m = mass[i - 1];
		/* a quarter turn apart, slightly inclined orbits */
		switch (i & 3) {
		case 1: b[i].x = r; b[i].vy = v; break;
		case 2: b[i].y = r; b[i].vx = -v; break;
		case 3: b[i].x = -r; b[i].vy = -v; break;
		default: b[i].y = -r; b[i].vx = v; break;
		}
		b[i].vz = 0.01 * v * (double)(i - 2);
		px += b[i].m * b[i].vx;
		py += b[i].m * b[i].vy;
		pz += b[i].m * b[i].vz;
	}
	/* total momentum zero */
	b[0].vx = -px / b[0].m;
	b[0].vy = -py / b[0].m;
	b[0].vz = -pz / b[0].m;
}

static double energy(void)
{
	double e = 0;
	int i, j;

	for (i = 0; i < BODIES; i++) {
		e += 0.5 * b[i].m * (b[i].vx * b[i].vx + b[i].vy * b[i].vy + b[i].vz * b[i].vz);
		for (j = i + 1; j < BODIES; j++) {
			double dx = b[i].x - b[j].x, dy = b[i].y - b[j].y, dz = b[i].z - b[j].z;

			e -= b[i].m * b[j].m / x87_sqrt(dx * dx + dy * dy + dz * dz);
		}
	}
	return e;
}

static void advance(int steps)
{
	int s, i, j;

	for (s = 0; s < steps; s++) {
		for (i = 0; i < BODIES; i++) {
			for (j = i + 1; j < BODIES; j++) {
				double dx = b[i].x - b[j].x, dy = b[i].y - b[j].y, dz = b[i].z - b[j].z;
				double d2 = dx * dx + dy * dy + dz * dz;
				double mag = DT / (d2 * x87_sqrt(d2));
				double mi = b[i].m * mag, mj = b[j].m * mag;

				b[i].vx -= dx * mj;
				b[i].vy -= dy * mj;
				b[i].vz -= dz * mj;
				b[j].vx += dx * mi;
				b[j].vy += dy * mi;
				b[j].vz += dz * mi;
			}
		}
		for (i = 0; i < BODIES; i++) {
			b[i].x += DT * b[i].vx;
			b[i].y += DT * b[i].vy;
			b[i].z += DT * b[i].vz;
		}
	}
}

int main(int argc, char **argv)
{
	uint32_t n = bench_iters(argc, argv, DEFAULT_ITERS), it;
	double e0, e1, drift;
	char s0[40], s1[40], sx[40], sy[40];

	setup();
	e0 = energy();
	for (it = 0; it < n; it++)
		advance(STEPS_PER_ITER);
	e1 = energy();
	drift = x87_fabs((e1 - e0) / e0);
	if (!(drift < 1e-4))
		bench_fail("x87", "energy not conserved", n);
	printf("x87: %u x %u steps, energy/1e-4 %s -> %s, planet 1 at (%s, %s)\n", n,
	       STEPS_PER_ITER, fmt_fixed(s0, sizeof s0, e0 * 1e4, 9),
	       fmt_fixed(s1, sizeof s1, e1 * 1e4, 9), fmt_fixed(sx, sizeof sx, b[1].x, 9),
	       fmt_fixed(sy, sizeof sy, b[1].y, 9));
	return 0;
}
