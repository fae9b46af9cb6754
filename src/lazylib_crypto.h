/*
 * lazylib_crypto.h - libcrypto (OpenSSL 3) through the lazily loaded table (see
 * lazylib.h). Include this instead of <openssl/evp.h> / <openssl/hmac.h>;
 * call dl_crypto_load first. Only the webhook-style targets need it (the
 * idempotency key's SHA-256 and the HMAC signature), so a daemon that
 * delivers to files never maps libcrypto.
 */
#ifndef SURECRON_LAZYLIB_CRYPTO_H
#define SURECRON_LAZYLIB_CRYPTO_H

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "lazylib.h"

/* Every libcrypto function the library calls; add a row to use another. */
#define DL_CRYPTO_FUNCS(X)                                                  \
	X(EVP_DigestFinal_ex)                                               \
	X(EVP_DigestInit_ex)                                                \
	X(EVP_DigestUpdate)                                                 \
	X(EVP_MD_CTX_free)                                                  \
	X(EVP_MD_CTX_new)                                                   \
	X(EVP_sha256)                                                       \
	X(HMAC)

struct dl_crypto_table {
#define DL_CRYPTO_SLOT(f) __typeof__(f) *f;
	DL_CRYPTO_FUNCS(DL_CRYPTO_SLOT)
#undef DL_CRYPTO_SLOT
};

/* Filled once by dl_crypto_load; read-only afterwards. */
extern struct dl_crypto_table dl_crypto;

#ifndef LAZYLIB_IMPL
#define EVP_DigestFinal_ex (dl_crypto.EVP_DigestFinal_ex)
#define EVP_DigestInit_ex (dl_crypto.EVP_DigestInit_ex)
#define EVP_DigestUpdate (dl_crypto.EVP_DigestUpdate)
#define EVP_MD_CTX_free (dl_crypto.EVP_MD_CTX_free)
#define EVP_MD_CTX_new (dl_crypto.EVP_MD_CTX_new)
#define EVP_sha256 (dl_crypto.EVP_sha256)
#define HMAC (dl_crypto.HMAC)
#endif

#endif
