// HTTPS requests through the system's libcurl (Debian's OpenSSL flavour, libcurl.so.4: 7.88 on
// bookworm, 8.14 on trixie; its headers from libcurl4-openssl-dev), for the uploads to the
// rider's platforms. Swift cannot call curl_easy_setopt (variadic), hence this shim: one whole
// request per call, on the caller's thread; errors come back as text.
#ifndef WORKOUTD_CCURL_H
#define WORKOUTD_CCURL_H
#include <stddef.h>

/// One request. The strings and the body are read during ccurl_perform only.
struct ccurl_request {
  const char *method;
  const char *url;
  /// Header lines, "Name: value".
  const char *const *headers;
  int header_count;
  const unsigned char *body;
  size_t body_length;
  /// A PEM file of the CAs to trust instead of the system's store; NULL: the system's.
  const char *ca_file;
  /// Nonzero: http:// is allowed beside https:// (a test's or a LAN server's).
  int allow_http;
  long connect_timeout_seconds;
  /// An attempt slower than this many bytes a second for `low_speed_seconds` ends: a dead
  /// network or a silent server does not hold the uploader for ever.
  long low_speed_bytes_per_second;
  long low_speed_seconds;
  /// The largest reply body kept; a longer one ends the attempt.
  size_t reply_limit;
  /// Called often during the transfer (and about once a second while it waits): nonzero
  /// aborts it. May be NULL.
  int (*should_stop)(void *context);
  void *stop_context;
};

/// What came back: the final response's status, its header block as received (the status line
/// and "Name: value" lines, CRLF-separated), and its body. Buffers are freed by ccurl_reply_free.
struct ccurl_reply {
  long status;
  char *head;
  size_t head_length;
  unsigned char *body;
  size_t body_length;
};

enum ccurl_result {
  /// The server answered (any status).
  CCURL_ANSWERED = 0,
  /// No answer: DNS, connection, TLS, a timeout, a dropped connection; the error says which.
  CCURL_UNREACHABLE = 1,
  /// `should_stop` said so.
  CCURL_STOPPED = 2,
};

/// Loads the system's libcurl (once; ccurl_perform needs it). 0, or -1 with the reason in `error`.
int ccurl_load(char *error, size_t error_size);

/// Sends `request` and waits for the reply. The reply's buffers are set when CCURL_ANSWERED.
enum ccurl_result ccurl_perform(const struct ccurl_request *request, struct ccurl_reply *reply, char *error,
                                size_t error_size);
void ccurl_reply_free(struct ccurl_reply *reply);

/// The loaded libcurl's version ("7.88.1"), or NULL before ccurl_load succeeded.
const char *ccurl_version(void);
#endif
