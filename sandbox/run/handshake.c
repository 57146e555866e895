/*
 * The fast path's handshake proofs (handshake.h): one function for both
 * proofs, so the order of the pieces under the MAC is written once on
 * sandpit's side, as hmac_proof writes it once on the helper's.
 */
#include "handshake.h"

#include <sodium.h>

void run_fast_proof(const unsigned char secret[HP_SECRET_LEN], const char *label,
		    const unsigned char nonce_h[HP_NONCE_LEN],
		    const unsigned char nonce_c[HP_NONCE_LEN], const char *owner, size_t owner_len,
		    unsigned char out[HP_MAC_LEN])
{
	crypto_auth_hmacsha256_state st;

	crypto_auth_hmacsha256_init(&st, secret, HP_SECRET_LEN);
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)label, HP_LABEL_LEN);
	crypto_auth_hmacsha256_update(&st, nonce_h, HP_NONCE_LEN);
	crypto_auth_hmacsha256_update(&st, nonce_c, HP_NONCE_LEN);
	if (owner)
		crypto_auth_hmacsha256_update(&st, (const unsigned char *)owner, owner_len);
	crypto_auth_hmacsha256_final(&st, out);
	sodium_memzero(&st, sizeof(st));
}
