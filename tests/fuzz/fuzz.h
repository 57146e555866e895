/*
 * Shared by the libFuzzer targets in tests/fuzz/: the entry point's
 * prototype, a check that aborts with the failed condition (libFuzzer then
 * keeps the input as a crash), and a reader that takes fuzzer-chosen
 * numbers from the front of an input. Targets call the project's own code,
 * never copies of it; a fake stands in only where the real thing is a
 * socket, and is named fake_*.
 */
#ifndef SANDPIT_FUZZ_H
#define SANDPIT_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                                         \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                                 \
		}                                                                                \
	} while (0)

/* Consumes input from the front: bytes and small numbers for choices. */
struct fuzz_in {
	const uint8_t *p;
	size_t n;
};

static inline unsigned fuzz_byte(struct fuzz_in *in)
{
	unsigned b = 0;

	if (in->n) {
		b = in->p[0];
		in->p++;
		in->n--;
	}
	return b;
}

static inline unsigned fuzz_u16(struct fuzz_in *in)
{
	unsigned hi = fuzz_byte(in);

	return hi << 8 | fuzz_byte(in);
}

/* Takes up to want bytes; *got says how many. */
static inline const uint8_t *fuzz_take(struct fuzz_in *in, size_t want, size_t *got)
{
	const uint8_t *p = in->p;

	*got = want < in->n ? want : in->n;
	in->p += *got;
	in->n -= *got;
	return p;
}

#endif
