/*
 * The fast path's handshake proofs for sandpit-helper (hmac.c): its own
 * SHA-256 and HMAC, since the helper links no library.
 */
#ifndef SANDPIT_HELPER_HMAC_H
#define SANDPIT_HELPER_HMAC_H

#include <stddef.h>

#include "proto.h"

/* HMAC-SHA-256(secret, label nonce_h nonce_c owner) into out: label is
 * HP_LABEL_C or HP_LABEL_S (HP_LABEL_LEN bytes); owner (owner_len bytes)
 * only in the helper's proof, NULL in sandpit's. */
void hmac_proof(const unsigned char secret[HP_SECRET_LEN], const char *label,
		const unsigned char nonce_h[HP_NONCE_LEN],
		const unsigned char nonce_c[HP_NONCE_LEN], const char *owner, size_t owner_len,
		unsigned char out[HP_MAC_LEN]);

#endif
