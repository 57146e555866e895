/*
 * Docker's multiplexed stream framing (non-TTY attach and exec): each frame
 * is an 8-byte header {stream, 0, 0, 0, size as big-endian uint32} and size
 * payload bytes. The demuxer is fed pieces of any size, holds at most one
 * partial header, and hands payload on as it arrives, so memory stays
 * bounded whatever the frame size. It must never deliver bytes after a
 * malformed header: once broken it stays broken.
 */
#include <string.h>

#include "docker.h"

#define DEMUX_BROKEN (-1)

void docker_demux_init(struct docker_demux *d)
{
	memset(d, 0, sizeof(*d));
}

/* Stream 0 (stdin) never appears in exec output; Docker documents it as
 * "written on stdout", so it is delivered as stream 1. A header whose stream
 * byte is above 2, or whose three padding bytes are not zero, is malformed. */
int docker_demux_feed(struct docker_demux *d, const char *p, size_t n, docker_output_fn on_data,
		      void *arg)
{
	if (d->stream == DEMUX_BROKEN)
		return -1;
	while (n > 0) {
		size_t k;

		if (d->left == 0) {
			k = sizeof(d->hdr) - d->hdr_have;
			if (k > n)
				k = n;
			memcpy(d->hdr + d->hdr_have, p, k);
			d->hdr_have += k;
			p += k;
			n -= k;
			if (d->hdr_have < sizeof(d->hdr))
				return 0;
			d->hdr_have = 0;
			if (d->hdr[0] > 2 || d->hdr[1] || d->hdr[2] || d->hdr[3]) {
				d->stream = DEMUX_BROKEN;
				return -1;
			}
			d->stream = d->hdr[0] == 2 ? 2 : 1;
			d->left = (uint32_t)d->hdr[4] << 24 | (uint32_t)d->hdr[5] << 16 |
				  (uint32_t)d->hdr[6] << 8 | (uint32_t)d->hdr[7];
			continue;
		}
		k = n < d->left ? n : d->left;
		d->left -= (uint32_t)k;
		if (on_data(arg, d->stream, p, k) < 0)
			return 1;
		p += k;
		n -= k;
	}
	return 0;
}

int docker_demux_whole(const struct docker_demux *d)
{
	return d->stream != DEMUX_BROKEN && d->left == 0 && d->hdr_have == 0;
}
