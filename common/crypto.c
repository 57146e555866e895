/*
 * libsodium wrappers. See crypto.h. Never logs or returns key material;
 * derived sub-keys live on the stack and are wiped before return.
 */
#include "crypto.h"

#include <stdio.h>
#include <string.h>

#include <sodium.h>

enum { SUBKEY_ENV = 1, SUBKEY_APIKEY = 2 };
static const char kdf_ctx[crypto_kdf_CONTEXTBYTES] = "sandpit1";

int crypto_init(void)
{
	return sodium_init() < 0 ? -1 : 0;
}

void crypto_random_id(char *out, size_t n)
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";

	for (size_t i = 0; i < n; i++)
		out[i] = alphabet[randombytes_uniform(sizeof(alphabet) - 1)];
	out[n] = '\0';
}

void crypto_new_api_key(char *out, size_t cap)
{
	unsigned char raw[32];
	char b64[sodium_base64_ENCODED_LEN(32, sodium_base64_VARIANT_URLSAFE_NO_PADDING)];

	randombytes_buf(raw, sizeof(raw));
	sodium_bin2base64(b64, sizeof(b64), raw, sizeof(raw),
			  sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	if (snprintf(out, cap, "sp_%s", b64) >= (int)cap && cap > 0)
		out[0] = '\0';
	sodium_memzero(raw, sizeof(raw));
	sodium_memzero(b64, sizeof(b64));
}

void crypto_key_hash(const unsigned char data_key[32], const char *api_key, size_t len,
		     char out[65])
{
	unsigned char sub[crypto_generichash_KEYBYTES], h[32];

	crypto_kdf_derive_from_key(sub, sizeof(sub), SUBKEY_APIKEY, kdf_ctx, data_key);
	crypto_generichash(h, sizeof(h), (const unsigned char *)api_key, len, sub, sizeof(sub));
	sodium_bin2hex(out, 65, h, sizeof(h));
	sodium_memzero(sub, sizeof(sub));
}

int crypto_seal(const unsigned char data_key[32], const char *ad, const void *plain, size_t len,
		struct buf *out)
{
	unsigned char sub[crypto_aead_xchacha20poly1305_ietf_KEYBYTES];
	size_t rawlen = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES + len +
			crypto_aead_xchacha20poly1305_ietf_ABYTES;
	size_t b64len = sodium_base64_ENCODED_LEN(rawlen, sodium_base64_VARIANT_ORIGINAL);
	unsigned char *raw = NULL;
	char *b64 = NULL;
	unsigned long long clen;
	int rc = -1;

	raw = sodium_malloc(rawlen);
	b64 = sodium_malloc(b64len);
	if (!raw || !b64)
		goto out;
	crypto_kdf_derive_from_key(sub, sizeof(sub), SUBKEY_ENV, kdf_ctx, data_key);
	randombytes_buf(raw, crypto_aead_xchacha20poly1305_ietf_NPUBBYTES);
	crypto_aead_xchacha20poly1305_ietf_encrypt(
		raw + crypto_aead_xchacha20poly1305_ietf_NPUBBYTES, &clen, plain, len,
		(const unsigned char *)ad, strlen(ad), NULL, raw, sub);
	sodium_bin2base64(b64, b64len, raw, rawlen, sodium_base64_VARIANT_ORIGINAL);
	rc = buf_puts(out, b64);
out:
	sodium_memzero(sub, sizeof(sub));
	sodium_free(raw);
	sodium_free(b64);
	return rc;
}

int crypto_open(const unsigned char data_key[32], const char *ad, const char *sealed, size_t len,
		struct buf *out)
{
	unsigned char sub[crypto_aead_xchacha20poly1305_ietf_KEYBYTES];
	const size_t nb = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;
	unsigned char *raw = NULL, *plain = NULL;
	size_t rawlen;
	unsigned long long plen;
	int rc = -1;

	raw = sodium_malloc(len + 1);
	if (!raw)
		goto out;
	if (sodium_base642bin(raw, len + 1, sealed, len, NULL, &rawlen, NULL,
			      sodium_base64_VARIANT_ORIGINAL) != 0 ||
	    rawlen < nb + crypto_aead_xchacha20poly1305_ietf_ABYTES)
		goto out;
	plain = sodium_malloc(rawlen);
	if (!plain)
		goto out;
	crypto_kdf_derive_from_key(sub, sizeof(sub), SUBKEY_ENV, kdf_ctx, data_key);
	if (crypto_aead_xchacha20poly1305_ietf_decrypt(plain, &plen, NULL, raw + nb, rawlen - nb,
						       (const unsigned char *)ad, strlen(ad), raw,
						       sub) != 0)
		goto out;
	rc = buf_append(out, plain, (size_t)plen);
out:
	sodium_memzero(sub, sizeof(sub));
	if (raw)
		sodium_free(raw);
	if (plain)
		sodium_free(plain);
	return rc;
}
