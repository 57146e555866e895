/*
 * The forms of ids and of generated names, and this installation's id:
 * one place for what a sandbox id looks like and for the base-36 time in
 * a name a create makes up (both faces). Calls nothing in sandbox/.
 */
#include "base.h"

#include <string.h>

#include "../../common/crypto.h"
#include "../../store/store.h"

int sandbox_id_ok(const char *id)
{
	size_t n = id ? strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789") : 0;

	return n == SANDBOX_ID_LEN && id[n] == '\0';
}

void sandbox_time_name(const char *prefix, int64_t ms, char *out, size_t cap)
{
	char digits[16];
	size_t n = 0, p;
	uint64_t v = ms > 0 ? (uint64_t)ms : 0;

	if (cap == 0)
		return;
	do {
		digits[n++] = "0123456789abcdefghijklmnopqrstuvwxyz"[v % 36];
		v /= 36;
	} while (v && n < sizeof(digits));
	if (n > cap - 1)
		n = cap - 1;
	p = strlen(prefix);
	if (p > cap - 1 - n)
		p = cap - 1 - n;
	memcpy(out, prefix, p);
	for (size_t i = 0; i < n; i++)
		out[p + i] = digits[n - 1 - i];
	out[p + n] = '\0';
}

void sandbox_default_name(int64_t ms, char *out, size_t cap)
{
	sandbox_time_name("sandbox-", ms, out, cap);
}

int sandbox_install_id(struct sandbox_ctx *ctx, struct sp_err *e)
{
	char fresh[SANDBOX_ID_LEN + 1];

	if (ctx->install_id[0])
		return 0;
	crypto_random_id(fresh, SANDBOX_ID_LEN);
	return store_install_id(ctx->st, fresh, ctx->install_id, sizeof(ctx->install_id), e);
}
