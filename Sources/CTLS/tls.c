#include "CTLS.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// OpenSSL is loaded when TLS is first wanted, not linked: mapped and relocated at every start,
// libssl and libcrypto add 1.9 MB to the resident memory of a service that has the phone page
// off (and most boards do). The functions are found by name in the libraries' soname 3, the
// ABI of OpenSSL 3.x (bookworm's 3.0, trixie's 3.5), and called through pointers of the
// headers' own types: each name below is, from here on, its pointer.
#define CTLS_CRYPTO(X)                                                                                  \
  X(ERR_get_error) X(ERR_error_string_n) X(ERR_peek_error) X(ERR_peek_last_error) X(ERR_clear_error)     \
  X(BIO_new) X(BIO_s_mem) X(BIO_ctrl) X(BIO_free) X(BIO_new_mem_buf) X(PEM_write_bio_PrivateKey)          \
  X(PEM_write_bio_X509) X(PEM_read_bio_X509) X(PEM_read_bio_PrivateKey) X(X509V3_set_ctx)               \
  X(X509V3_EXT_conf_nid) X(X509_add_ext) X(X509_EXTENSION_free) X(EVP_PKEY_Q_keygen) X(X509_new)       \
  X(BN_new) X(X509_set_version) X(BN_rand) X(BN_to_ASN1_INTEGER) X(X509_get_serialNumber)              \
  X(ASN1_TIME_set_string_X509) X(X509_getm_notBefore) X(X509_getm_notAfter) X(X509_get_subject_name)   \
  X(X509_NAME_add_entry_by_txt) X(X509_set_issuer_name) X(X509_set_pubkey) X(X509_sign) X(EVP_sha256)   \
  X(BN_free) X(X509_free) X(EVP_PKEY_free) X(X509_digest)
#define CTLS_SSL(X)                                                                                     \
  X(SSL_CTX_new) X(TLS_server_method) X(SSL_CTX_ctrl) X(SSL_CTX_set_options) X(SSL_CTX_use_certificate) \
  X(SSL_CTX_use_PrivateKey) X(SSL_CTX_check_private_key) X(SSL_CTX_free) X(SSL_new) X(SSL_set_fd)       \
  X(SSL_set_accept_state) X(SSL_free) X(SSL_get_error) X(SSL_do_handshake) X(SSL_read) X(SSL_write)     \
  X(SSL_pending) X(SSL_get_version) X(SSL_is_init_finished) X(SSL_shutdown)

#define CTLS_POINTER(name) __typeof__(name) *p_##name;
static struct {
  CTLS_CRYPTO(CTLS_POINTER)
  CTLS_SSL(CTLS_POINTER)
} openssl;
static char load_error[256];
static pthread_once_t loading = PTHREAD_ONCE_INIT;

static void load(void) {
  void *crypto = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
  void *ssl = crypto ? dlopen("libssl.so.3", RTLD_NOW | RTLD_LOCAL) : NULL;
  if (ssl == NULL) {
    snprintf(load_error, sizeof load_error, "OpenSSL 3 is not installed (libssl3): %s", dlerror());
    return;
  }
#define CTLS_FIND(library, name)                                                                   \
  if ((openssl.p_##name = (__typeof__(name) *)dlsym(library, #name)) == NULL) {                    \
    snprintf(load_error, sizeof load_error, "OpenSSL has no %s: not OpenSSL 3", #name);            \
    return;                                                                                        \
  }
#define CTLS_FIND_CRYPTO(name) CTLS_FIND(crypto, name)
#define CTLS_FIND_SSL(name) CTLS_FIND(ssl, name)
  CTLS_CRYPTO(CTLS_FIND_CRYPTO)
  CTLS_SSL(CTLS_FIND_SSL)
}

int ctls_load(char *error, size_t error_size) {
  pthread_once(&loading, load);
  if (load_error[0] == 0) return 0;
  snprintf(error, error_size, "%s", load_error);
  return -1;
}

#define ERR_get_error (*openssl.p_ERR_get_error)
#define ERR_error_string_n (*openssl.p_ERR_error_string_n)
#define ERR_peek_error (*openssl.p_ERR_peek_error)
#define ERR_peek_last_error (*openssl.p_ERR_peek_last_error)
#define ERR_clear_error (*openssl.p_ERR_clear_error)
#define BIO_new (*openssl.p_BIO_new)
#define BIO_s_mem (*openssl.p_BIO_s_mem)
#define BIO_ctrl (*openssl.p_BIO_ctrl)
#define BIO_free (*openssl.p_BIO_free)
#define BIO_new_mem_buf (*openssl.p_BIO_new_mem_buf)
#define PEM_write_bio_PrivateKey (*openssl.p_PEM_write_bio_PrivateKey)
#define PEM_write_bio_X509 (*openssl.p_PEM_write_bio_X509)
#define PEM_read_bio_X509 (*openssl.p_PEM_read_bio_X509)
#define PEM_read_bio_PrivateKey (*openssl.p_PEM_read_bio_PrivateKey)
#define X509V3_set_ctx (*openssl.p_X509V3_set_ctx)
#define X509V3_EXT_conf_nid (*openssl.p_X509V3_EXT_conf_nid)
#define X509_add_ext (*openssl.p_X509_add_ext)
#define X509_EXTENSION_free (*openssl.p_X509_EXTENSION_free)
#define EVP_PKEY_Q_keygen (*openssl.p_EVP_PKEY_Q_keygen)
#define X509_new (*openssl.p_X509_new)
#define BN_new (*openssl.p_BN_new)
#define X509_set_version (*openssl.p_X509_set_version)
#define BN_rand (*openssl.p_BN_rand)
#define BN_to_ASN1_INTEGER (*openssl.p_BN_to_ASN1_INTEGER)
#define X509_get_serialNumber (*openssl.p_X509_get_serialNumber)
#define ASN1_TIME_set_string_X509 (*openssl.p_ASN1_TIME_set_string_X509)
#define X509_getm_notBefore (*openssl.p_X509_getm_notBefore)
#define X509_getm_notAfter (*openssl.p_X509_getm_notAfter)
#define X509_get_subject_name (*openssl.p_X509_get_subject_name)
#define X509_NAME_add_entry_by_txt (*openssl.p_X509_NAME_add_entry_by_txt)
#define X509_set_issuer_name (*openssl.p_X509_set_issuer_name)
#define X509_set_pubkey (*openssl.p_X509_set_pubkey)
#define X509_sign (*openssl.p_X509_sign)
#define EVP_sha256 (*openssl.p_EVP_sha256)
#define BN_free (*openssl.p_BN_free)
#define X509_free (*openssl.p_X509_free)
#define EVP_PKEY_free (*openssl.p_EVP_PKEY_free)
#define X509_digest (*openssl.p_X509_digest)
#define SSL_CTX_new (*openssl.p_SSL_CTX_new)
#define TLS_server_method (*openssl.p_TLS_server_method)
#define SSL_CTX_ctrl (*openssl.p_SSL_CTX_ctrl)
#define SSL_CTX_set_options (*openssl.p_SSL_CTX_set_options)
#define SSL_CTX_use_certificate (*openssl.p_SSL_CTX_use_certificate)
#define SSL_CTX_use_PrivateKey (*openssl.p_SSL_CTX_use_PrivateKey)
#define SSL_CTX_check_private_key (*openssl.p_SSL_CTX_check_private_key)
#define SSL_CTX_free (*openssl.p_SSL_CTX_free)
#define SSL_new (*openssl.p_SSL_new)
#define SSL_set_fd (*openssl.p_SSL_set_fd)
#define SSL_set_accept_state (*openssl.p_SSL_set_accept_state)
#define SSL_free (*openssl.p_SSL_free)
#define SSL_get_error (*openssl.p_SSL_get_error)
#define SSL_do_handshake (*openssl.p_SSL_do_handshake)
#define SSL_read (*openssl.p_SSL_read)
#define SSL_write (*openssl.p_SSL_write)
#define SSL_pending (*openssl.p_SSL_pending)
#define SSL_get_version (*openssl.p_SSL_get_version)
#define SSL_is_init_finished (*openssl.p_SSL_is_init_finished)
#define SSL_shutdown (*openssl.p_SSL_shutdown)

/// OpenSSL's queued errors as one line (the last is the most specific), or `fallback`.
static void describe(char *error, size_t size, const char *fallback) {
  unsigned long code, last = 0;
  while ((code = ERR_get_error()) != 0) last = code;
  if (size == 0) return;
  if (last != 0) {
    ERR_error_string_n(last, error, size);
  } else {
    snprintf(error, size, "%s", fallback);
  }
}

/// A PEM text of what `write` puts in a memory BIO, malloc'd.
static int pem_text(int (*write)(BIO *, void *), void *object, char **out, size_t *length) {
  BIO *bio = BIO_new(BIO_s_mem());
  if (bio == NULL) return -1;
  int ok = write(bio, object);
  char *data = NULL;
  long size = BIO_get_mem_data(bio, &data);
  if (ok && size > 0 && (*out = malloc((size_t)size)) != NULL) {
    memcpy(*out, data, (size_t)size);
    *length = (size_t)size;
    BIO_free(bio);
    return 0;
  }
  BIO_free(bio);
  return -1;
}

static int write_key(BIO *bio, void *key) {
  return PEM_write_bio_PrivateKey(bio, (EVP_PKEY *)key, NULL, NULL, 0, NULL, NULL);
}

static int write_cert(BIO *bio, void *cert) { return PEM_write_bio_X509(bio, (X509 *)cert); }

static int add_extension(X509 *cert, int nid, const char *value) {
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, cert, cert, NULL, NULL, 0);
  X509_EXTENSION *extension = X509V3_EXT_conf_nid(NULL, &context, nid, value);
  if (extension == NULL) return 0;
  int ok = X509_add_ext(cert, extension, -1);
  X509_EXTENSION_free(extension);
  return ok;
}

int ctls_make_identity(const char *common_name, const char *const *dns, int dns_count, const char *const *ips,
                       int ip_count, char **key_pem, size_t *key_length, char **cert_pem, size_t *cert_length,
                       char *error, size_t error_size) {
  int result = -1;
  X509 *cert = NULL;
  BIGNUM *serial = NULL;
  char *names = NULL;
  *key_pem = *cert_pem = NULL;
  EVP_PKEY *key = EVP_EC_gen("P-256");
  if (key == NULL) goto done;
  cert = X509_new();
  serial = BN_new();
  if (cert == NULL || serial == NULL) goto done;
  // RFC 5280 §4.1.2.2: a positive serial of at most 20 octets, unpredictable.
  if (!X509_set_version(cert, X509_VERSION_3) || !BN_rand(serial, 159, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) ||
      BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(cert)) == NULL)
    goto done;
  // A board without a real-time clock may start in the past or not know the date at all, so the
  // validity does not depend on it: from 2024, and RFC 5280 §4.1.2.5's "no well-defined
  // expiration date" (the rider trusts this certificate by its fingerprint, not by a date).
  if (!ASN1_TIME_set_string_X509(X509_getm_notBefore(cert), "20240101000000Z") ||
      !ASN1_TIME_set_string_X509(X509_getm_notAfter(cert), "99991231235959Z"))
    goto done;
  X509_NAME *subject = X509_get_subject_name(cert);
  if (!X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8, (const unsigned char *)common_name, -1, -1, 0) ||
      !X509_set_issuer_name(cert, subject) || !X509_set_pubkey(cert, key))
    goto done;
  size_t room = 1;
  for (int i = 0; i < dns_count; i++) room += strlen(dns[i]) + 5;
  for (int i = 0; i < ip_count; i++) room += strlen(ips[i]) + 4;
  names = calloc(room, 1);
  if (names == NULL) goto done;
  for (int i = 0; i < dns_count; i++) {
    if (*names) strcat(names, ",");
    strcat(names, "DNS:");
    strcat(names, dns[i]);
  }
  for (int i = 0; i < ip_count; i++) {
    if (*names) strcat(names, ",");
    strcat(names, "IP:");
    strcat(names, ips[i]);
  }
  if ((*names && !add_extension(cert, NID_subject_alt_name, names)) ||
      !add_extension(cert, NID_basic_constraints, "critical,CA:FALSE") ||
      !add_extension(cert, NID_key_usage, "critical,digitalSignature") ||
      !add_extension(cert, NID_ext_key_usage, "serverAuth") ||
      !add_extension(cert, NID_subject_key_identifier, "hash"))
    goto done;
  if (X509_sign(cert, key, EVP_sha256()) == 0) goto done;
  if (pem_text(write_key, key, key_pem, key_length) != 0 || pem_text(write_cert, cert, cert_pem, cert_length) != 0)
    goto done;
  result = 0;
done:
  if (result != 0) {
    describe(error, error_size, "cannot make the key and certificate");
    free(*key_pem);
    free(*cert_pem);
    *key_pem = *cert_pem = NULL;
  }
  free(names);
  BN_free(serial);
  X509_free(cert);
  EVP_PKEY_free(key);
  return result;
}

void ctls_free(void *buffer) { free(buffer); }

int ctls_fingerprint(const char *cert_pem, size_t cert_length, unsigned char digest[32], char *error,
                     size_t error_size) {
  BIO *bio = BIO_new_mem_buf(cert_pem, (int)cert_length);
  X509 *cert = bio ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
  unsigned int length = 0;
  int ok = cert != NULL && X509_digest(cert, EVP_sha256(), digest, &length) && length == 32;
  if (!ok) describe(error, error_size, "not a PEM certificate");
  X509_free(cert);
  BIO_free(bio);
  return ok ? 0 : -1;
}

ctls_context ctls_server_context(const char *cert_pem, size_t cert_length, const char *key_pem, size_t key_length,
                                 char *error, size_t error_size) {
  SSL_CTX *context = SSL_CTX_new(TLS_server_method());
  BIO *certs = BIO_new_mem_buf(cert_pem, (int)cert_length);
  BIO *keys = BIO_new_mem_buf(key_pem, (int)key_length);
  X509 *leaf = NULL;
  EVP_PKEY *key = NULL;
  int ok = 0;
  if (context == NULL || certs == NULL || keys == NULL) goto done;
  // TLS 1.0 and 1.1 are deprecated (RFC 8996); every phone browser since 2018 has 1.2 and 1.3.
  if (!SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION)) goto done;
  // No renegotiation (a client-driven CPU cost); buffers given back while a connection idles
  // (a live feed spends nearly all its time idle: 34 KiB each otherwise).
  SSL_CTX_set_options(context, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_mode(context, SSL_MODE_RELEASE_BUFFERS);
  leaf = PEM_read_bio_X509(certs, NULL, NULL, NULL);
  if (leaf == NULL || !SSL_CTX_use_certificate(context, leaf)) goto done;
  X509 *issuer;
  while ((issuer = PEM_read_bio_X509(certs, NULL, NULL, NULL)) != NULL) {
    if (!SSL_CTX_add_extra_chain_cert(context, issuer)) {
      X509_free(issuer);
      goto done;
    }
  }
  ERR_clear_error();  // the end of the PEM text ends the loop with a "no start line" error
  key = PEM_read_bio_PrivateKey(keys, NULL, NULL, NULL);
  if (key == NULL || !SSL_CTX_use_PrivateKey(context, key) || !SSL_CTX_check_private_key(context)) goto done;
  ok = 1;
done:
  if (!ok) describe(error, error_size, "cannot set up TLS");
  EVP_PKEY_free(key);
  X509_free(leaf);
  BIO_free(certs);
  BIO_free(keys);
  if (!ok) {
    SSL_CTX_free(context);
    return NULL;
  }
  return context;
}

void ctls_context_free(ctls_context context) { SSL_CTX_free(context); }

ctls_connection ctls_accepting(ctls_context context, int fd) {
  SSL *connection = SSL_new(context);
  if (connection == NULL) return NULL;
  if (!SSL_set_fd(connection, fd)) {
    SSL_free(connection);
    return NULL;
  }
  SSL_set_accept_state(connection);
  return connection;
}

/// What SSL_get_error says of a call that returned `returned`.
static enum ctls_result outcome(SSL *connection, int returned, char *error, size_t error_size) {
  switch (SSL_get_error(connection, returned)) {
  case SSL_ERROR_WANT_READ:
    return CTLS_WANT_READ;
  case SSL_ERROR_WANT_WRITE:
    return CTLS_WANT_WRITE;
  case SSL_ERROR_ZERO_RETURN:
    return CTLS_CLOSED;
  case SSL_ERROR_SYSCALL:
    // OpenSSL 3: the peer ended the stream without close_notify is SSL_ERROR_SSL with
    // SSL_R_UNEXPECTED_EOF_WHILE_READING; an errno-less SYSCALL is the same end.
    if (ERR_peek_error() == 0) {
      describe(error, error_size, "the connection ended");
      return CTLS_CLOSED;
    }
    describe(error, error_size, "a socket error");
    return CTLS_FAILED;
  default:
    if (ERR_GET_REASON(ERR_peek_last_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
      ERR_clear_error();
      return CTLS_CLOSED;
    }
    describe(error, error_size, "a TLS error");
    return CTLS_FAILED;
  }
}

enum ctls_result ctls_handshake(ctls_connection connection, char *error, size_t error_size) {
  ERR_clear_error();
  int returned = SSL_do_handshake(connection);
  return returned == 1 ? CTLS_DONE : outcome(connection, returned, error, error_size);
}

enum ctls_result ctls_read(ctls_connection connection, void *buffer, int size, int *count, char *error,
                           size_t error_size) {
  ERR_clear_error();
  int returned = SSL_read(connection, buffer, size);
  if (returned > 0) {
    *count = returned;
    return CTLS_DONE;
  }
  *count = 0;
  return outcome(connection, returned, error, error_size);
}

enum ctls_result ctls_write(ctls_connection connection, const void *buffer, int size, char *error,
                            size_t error_size) {
  ERR_clear_error();
  int returned = SSL_write(connection, buffer, size);
  return returned > 0 ? CTLS_DONE : outcome(connection, returned, error, error_size);
}

int ctls_pending(ctls_connection connection) { return SSL_pending(connection); }

const char *ctls_protocol(ctls_connection connection) { return SSL_get_version(connection); }

void ctls_close(ctls_connection connection) {
  if (connection == NULL) return;
  if (SSL_is_init_finished(connection)) {
    ERR_clear_error();
    (void)SSL_shutdown(connection);
  }
  SSL_free(connection);
  ERR_clear_error();
}
