/*
 * Small checked helpers: number parsing through one wrapper (no atoi),
 * clocks, and safe string copies.
 */
#ifndef SANDPIT_UTIL_H
#define SANDPIT_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Parses a whole base-10 integer in [min, max]; -1 on junk, overflow or range. */
int parse_ll(const char *s, long long min, long long max, long long *out);
/* Parses a whole decimal number; -1 on junk. */
int parse_double(const char *s, double *out);
/* The value of a hexadecimal digit (either case), or -1. */
int hex_digit(int c);
/* Milliseconds since the epoch (wall clock). */
int64_t now_ms(void);
/* Milliseconds of a monotonic clock, for timeouts. */
int64_t mono_ms(void);
/* Microseconds of a monotonic clock, for measuring. */
int64_t mono_us(void);
/* Formats ms since the epoch as ISO 8601 UTC with milliseconds into out (>= 25 bytes). */
void iso8601_ms(int64_t ms, char *out, size_t cap);
/* Copies at most cap-1 bytes and terminates; returns -1 if s was cut. */
int str_copy(char *dst, size_t cap, const char *s);

#endif
