// TLS for the phone page through the system's OpenSSL 3 (libssl3: 3.0 on bookworm, 3.5 on
// trixie; its headers from libssl-dev): the board's key and self-signed certificate, a server context, and a
// connection on a non-blocking socket. Swift cannot call OpenSSL's macros (the protocol floor,
// SSL_CTX_set_mode), hence this shim; every function reports errors as text.
#ifndef WORKOUTD_CTLS_H
#define WORKOUTD_CTLS_H
#include <stddef.h>

typedef struct ssl_ctx_st *ctls_context;
typedef struct ssl_st *ctls_connection;

/// What a connection's step did: done, or it must wait for the socket to be readable or
/// writable and be called again, or the peer closed (a clean close_notify or the stream's end),
/// or it failed (the text is in the error buffer).
enum ctls_result { CTLS_DONE = 0, CTLS_WANT_READ = 1, CTLS_WANT_WRITE = 2, CTLS_CLOSED = 3, CTLS_FAILED = 4 };

/// Loads the system's OpenSSL 3 (once; every other function needs it). 0, or -1 with the
/// reason in `error`.
int ctls_load(char *error, size_t error_size);

/// A new P-256 key and a certificate for it, signed by itself with SHA-256, naming `common_name`
/// and, as subject alternative names, `dns` (host names) and `ips` (addresses as text). Both
/// are PEM, in buffers to free with ctls_free. 0 on success, -1 with the reason in `error`.
int ctls_make_identity(const char *common_name, const char *const *dns, int dns_count, const char *const *ips,
                       int ip_count, char **key_pem, size_t *key_length, char **cert_pem, size_t *cert_length,
                       char *error, size_t error_size);
void ctls_free(void *buffer);

/// The SHA-256 of the first certificate's DER in `cert_pem` (what a browser shows as the
/// certificate's fingerprint). 0 on success.
int ctls_fingerprint(const char *cert_pem, size_t cert_length, unsigned char digest[32], char *error,
                     size_t error_size);

/// A server context for TLS 1.2 and later with this key and certificate (chain: the leaf first,
/// then its issuers), or NULL with the reason in `error`.
ctls_context ctls_server_context(const char *cert_pem, size_t cert_length, const char *key_pem, size_t key_length,
                                 char *error, size_t error_size);
void ctls_context_free(ctls_context context);

/// A server connection on the socket `fd` (non-blocking), or NULL.
ctls_connection ctls_accepting(ctls_context context, int fd);
/// The handshake's next step.
enum ctls_result ctls_handshake(ctls_connection connection, char *error, size_t error_size);
/// Reads up to `size` bytes into `buffer`; `*count` is what was read when CTLS_DONE.
enum ctls_result ctls_read(ctls_connection connection, void *buffer, int size, int *count, char *error,
                           size_t error_size);
/// Writes `size` bytes (all of them, or none: call again with the same bytes after a wait).
enum ctls_result ctls_write(ctls_connection connection, const void *buffer, int size, char *error,
                            size_t error_size);
/// Bytes decrypted and waiting, which a poll on the socket cannot see.
int ctls_pending(ctls_connection connection);
/// The protocol agreed ("TLSv1.3").
const char *ctls_protocol(ctls_connection connection);
/// Sends close_notify (once, without waiting for the peer's) and frees the connection.
void ctls_close(ctls_connection connection);
#endif
