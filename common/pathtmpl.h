/*
 * The one path-template matcher: a path is matched against a template
 * segment by segment, and typed captures ({name} or {name:type}) check the
 * segment they stand for. The Docker allow-list (docker/client.c), the HTTP
 * route table (fcgi/route.c: routing, /_auth, MCP and sandpit-stream) all
 * use it, so what one accepts the other cannot read differently.
 *
 * Segment types:
 *   {x} or {x:id}  [A-Za-z0-9][A-Za-z0-9_.-]{0,127}: never empty, never "."
 *                  or "..", never an escape (so a raw path that matches is
 *                  also its own decoded form)
 *   {x:int}        1..18 decimal digits
 *   {x:ref}        one percent-escaped segment (an image reference): only
 *                  unreserved bytes and well-formed %XX; decoded, every
 *                  '/'-part is non-empty, not "." or "..", printable ASCII
 * Literal segments compare byte for byte. Empty segments ("//"), a trailing
 * '/' the template does not have, and a bad escape never match. Knows
 * nothing of HTTP.
 */
#ifndef SANDPIT_PATHTMPL_H
#define SANDPIT_PATHTMPL_H

#include <stddef.h>

/* The most captures one template may hold. */
#define PATHTMPL_MAX_CAPS 8

enum pathtmpl_type { PT_ID, PT_INT, PT_REF };

/* One capture: its name in the template and its value in the path (raw,
 * as matched: for PT_REF still escaped), both pointers into the caller's
 * strings, not terminated. */
struct pathtmpl_cap {
	const char *name;
	size_t name_len;
	enum pathtmpl_type type;
	const char *val;
	size_t len;
};

/* Matches path[0..n) against tmpl. 1 on a match (*ncaps captures written
 * to caps, at most PATHTMPL_MAX_CAPS; caps may be NULL), 0 otherwise. */
int pathtmpl_match(const char *tmpl, const char *path, size_t n, struct pathtmpl_cap *caps,
		   int *ncaps);
/* Checks a template: segments start with '/', a capture is a whole segment
 * "{name}" or "{name:id|int|ref}" with a name of [A-Za-z_][A-Za-z0-9_]*,
 * at most PATHTMPL_MAX_CAPS. 0 fine, -1 not. */
int pathtmpl_valid(const char *tmpl);
/* The capture named name (a NUL-terminated string) of a match, or NULL. */
const struct pathtmpl_cap *pathtmpl_cap_get(const struct pathtmpl_cap *caps, int ncaps,
					    const char *name);
/* The template without capture types ("/images/{name}/json" for
 * "/images/{name:ref}/json"), for metrics labels; cut to cap. */
void pathtmpl_label(const char *tmpl, char *out, size_t cap);
/* True when n bytes are a PT_ID segment (Docker's container and exec ids). */
int pathtmpl_id_ok(const char *s, size_t n);

#endif
