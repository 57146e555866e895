/*
 * The helper protocol (sandbox/helper/proto.h), both sides of it: the fast
 * path's handshake proofs as sandpit computes them (libsodium,
 * sandbox/run/handshake.c) and as the helper computes them (its own
 * SHA-256, sandbox/helper/hmac.c, built here with glibc) give one known
 * answer, computed apart from both (Python's hmac module), and agree on
 * other inputs; and every file refusal the helper can give has its own
 * error in the core (sandbox_files_code_err), none falls to "the helper
 * failed".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sandbox/helper/proto.h"
#include "sandbox/internal.h"
#include "sandbox/run/handshake.h"

/* the helper's own code, as the musl build compiles it */
#include "sandbox/helper/hmac.c"

/* secret 00..1f, the helper's nonce 40..4f, sandpit's 80..8f, uid:gid
 * 1000:1000; the answers are
 *   hmac.new(secret, b"sandpit-fast-c" + nh + nc, sha256)
 *   hmac.new(secret, b"sandpit-fast-s" + nh + nc + b"1000:1000", sha256) */
static const char KAT_C[] = "f0ab5959d044eee6d8dc74af87c44388d8a3fcc1a0ea47b605b098d0497e3d09";
static const char KAT_S[] = "8ab884debd51d546457fd442b4d22e34d72b6902cb5fb95bff60e2396db6dfce";
static const char OWNER[] = "1000:1000";

struct kat {
	unsigned char secret[HP_SECRET_LEN], nh[HP_NONCE_LEN], nc[HP_NONCE_LEN];
};

static void kat_init(struct kat *k)
{
	for (int i = 0; i < HP_SECRET_LEN; i++)
		k->secret[i] = (unsigned char)i;
	for (int i = 0; i < HP_NONCE_LEN; i++) {
		k->nh[i] = (unsigned char)(0x40 + i);
		k->nc[i] = (unsigned char)(0x80 + i);
	}
}

static void hex(const unsigned char *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", p[i]);
}

typedef void proof_fn(const unsigned char *secret, const char *label, const unsigned char *nh,
		      const unsigned char *nc, const char *owner, size_t olen, unsigned char *out);

static void core_proof(const unsigned char *secret, const char *label, const unsigned char *nh,
		       const unsigned char *nc, const char *owner, size_t olen, unsigned char *out)
{
	run_fast_proof(secret, label, nh, nc, owner, olen, out);
}

static void helper_proof(const unsigned char *secret, const char *label, const unsigned char *nh,
			 const unsigned char *nc, const char *owner, size_t olen,
			 unsigned char *out)
{
	hmac_proof(secret, label, nh, nc, owner, olen, out);
}

static void check_kat(proof_fn *f)
{
	struct kat k;
	unsigned char mac[HP_MAC_LEN];
	char h[2 * HP_MAC_LEN + 1];

	kat_init(&k);
	f(k.secret, HP_LABEL_C, k.nh, k.nc, NULL, 0, mac);
	hex(mac, sizeof(mac), h);
	assert_string_equal(h, KAT_C);
	f(k.secret, HP_LABEL_S, k.nh, k.nc, OWNER, strlen(OWNER), mac);
	hex(mac, sizeof(mac), h);
	assert_string_equal(h, KAT_S);
}

static void test_core_known_answer(void **state)
{
	(void)state;
	check_kat(core_proof);
}

static void test_helper_known_answer(void **state)
{
	(void)state;
	check_kat(helper_proof);
}

/* Both sides on other secrets, nonces and owners (a long uid:gid too). */
static void test_sides_agree(void **state)
{
	unsigned char secret[HP_SECRET_LEN], nh[HP_NONCE_LEN], nc[HP_NONCE_LEN];
	unsigned char a[HP_MAC_LEN], b[HP_MAC_LEN];
	char owner[HP_OWNER_MAX + 1];
	unsigned seed = 25;

	(void)state;
	for (int round = 0; round < 200; round++) {
		size_t olen;
		for (size_t i = 0; i < sizeof(secret); i++)
			secret[i] = (unsigned char)rand_r(&seed);
		for (size_t i = 0; i < sizeof(nh); i++) {
			nh[i] = (unsigned char)rand_r(&seed);
			nc[i] = (unsigned char)rand_r(&seed);
		}
		olen = (size_t)snprintf(owner, sizeof(owner), "%u:%u", (unsigned)rand_r(&seed),
					(unsigned)rand_r(&seed));
		run_fast_proof(secret, HP_LABEL_C, nh, nc, NULL, 0, a);
		hmac_proof(secret, HP_LABEL_C, nh, nc, NULL, 0, b);
		assert_memory_equal(a, b, HP_MAC_LEN);
		run_fast_proof(secret, HP_LABEL_S, nh, nc, owner, olen, a);
		hmac_proof(secret, HP_LABEL_S, nh, nc, owner, olen, b);
		assert_memory_equal(a, b, HP_MAC_LEN);
	}
}

/* The labels' lengths are what the header says (the MAC takes that many
 * bytes of each). */
static void test_labels(void **state)
{
	(void)state;
	assert_int_equal(strlen(HP_LABEL_C), HP_LABEL_LEN);
	assert_int_equal(strlen(HP_LABEL_S), HP_LABEL_LEN);
	assert_int_equal(strlen(HP_HELLO), HP_HELLO_LEN);
	assert_string_not_equal(HP_LABEL_C, HP_LABEL_S);
}

/* Each of the helper's file refusals is mapped: none reads as a helper
 * that failed (SP_UNAVAILABLE, the default for a status it never gives). */
static void test_file_codes_mapped(void **state)
{
	(void)state;
	for (int code = HF_FIRST; code <= HF_LAST; code++) {
		struct sp_err e;
		sp_err_clear(&e);
		assert_int_equal(sandbox_files_code_err("sbtest", code, "why", &e), -1);
		if (e.code == SP_UNAVAILABLE || e.code == SP_OK)
			fail_msg("HF code %d has no error of its own: %s", code, e.msg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_core_known_answer),
		cmocka_unit_test(test_helper_known_answer),
		cmocka_unit_test(test_sides_agree),
		cmocka_unit_test(test_labels),
		cmocka_unit_test(test_file_codes_mapped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
