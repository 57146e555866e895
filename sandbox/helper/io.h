/*
 * Whole writes and reads for sandpit-helper (io.c): the one place that
 * retries a short or interrupted write(2) or read(2).
 */
#ifndef SANDPIT_HELPER_IO_H
#define SANDPIT_HELPER_IO_H

#include <stddef.h>

/* Writes all n bytes of p to fd: 0, or -1 (errno set by write). */
int io_write_all(int fd, const void *p, size_t n);

/* Reads exactly n bytes from fd into p: 0, or -1 on an error or an end of
 * file before n bytes. */
int io_read_all(int fd, void *p, size_t n);

#endif
