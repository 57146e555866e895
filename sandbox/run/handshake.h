/*
 * The fast path's handshake proofs as sandpit computes them (handshake.c),
 * with libsodium; the helper computes the same with its own HMAC
 * (sandbox/helper/hmac.c). sandbox/helper/proto.h states the exchange.
 */
#ifndef SANDPIT_RUN_HANDSHAKE_H
#define SANDPIT_RUN_HANDSHAKE_H

#include <stddef.h>

#include "../helper/proto.h"

/* HMAC-SHA-256(secret, label nonce_h nonce_c owner) into out: label is
 * HP_LABEL_C (sandpit's proof, owner NULL) or HP_LABEL_S (the helper's,
 * with its uid:gid, owner_len bytes). Pure; any thread. */
void run_fast_proof(const unsigned char secret[HP_SECRET_LEN], const char *label,
		    const unsigned char nonce_h[HP_NONCE_LEN],
		    const unsigned char nonce_c[HP_NONCE_LEN], const char *owner, size_t owner_len,
		    unsigned char out[HP_MAC_LEN]);

#endif
