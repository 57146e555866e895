/*
 * Crypto wrappers over libsodium: random ids and API keys, keyed hashes of
 * API keys, and sealing of secrets at rest (XChaCha20-Poly1305). Sub-keys
 * for each purpose are derived from the one data key, which never leaves the
 * process. Every buffer that held a secret is wiped here before return.
 */
#ifndef SANDPIT_CRYPTO_H
#define SANDPIT_CRYPTO_H

#include <stddef.h>

#include "buf.h"

/* Initialises libsodium; -1 if it cannot. Call once before fork. */
int crypto_init(void);
/* Writes n random characters of [a-z0-9] and a NUL into out (cap > n). */
void crypto_random_id(char *out, size_t n);
/* A new API key "sp_" + 43 base64url characters (256 bits) into out (>= 48). */
void crypto_new_api_key(char *out, size_t cap);
/* Keyed BLAKE2b-256 of an API key as 64 hex chars + NUL into out (>= 65). */
void crypto_key_hash(const unsigned char data_key[32], const char *api_key, size_t len,
		     char out[65]);
/* Seals plain (len bytes) bound to ad; appends base64(nonce|ciphertext) to out. */
int crypto_seal(const unsigned char data_key[32], const char *ad, const void *plain, size_t len,
		struct buf *out);
/* Opens what crypto_seal made; appends the plaintext to out. -1 if forged. */
int crypto_open(const unsigned char data_key[32], const char *ad, const char *sealed, size_t len,
		struct buf *out);

#endif
