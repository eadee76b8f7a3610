#include "CCurl.h"

// Our names below are pointers; curl's type-checking macros would shadow them.
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// libcurl is loaded when an upload is first sent, not linked: linked, Debian's libcurl4 and the
// 30 libraries it needs (OpenSSL, nghttp2, ssh2, rtmp, psl, LDAP, GSSAPI, ...) are mapped and
// relocated at every start, 6.0 MiB of resident memory (bookworm amd64: a small C program's
// 1.2 MiB became 7.2) for a service that mostly has nothing to send. The functions are found by
// name in soname 4, libcurl's ABI since 7.16, and called through pointers of the headers' own
// types.
#define CCURL_FUNCTIONS(X)                                                                            \
  X(curl_global_init) X(curl_easy_init) X(curl_easy_setopt) X(curl_easy_perform) X(curl_easy_getinfo) \
  X(curl_easy_cleanup) X(curl_easy_strerror) X(curl_slist_append) X(curl_slist_free_all) X(curl_version_info)

#define CCURL_POINTER(name) __typeof__(name) *p_##name;
static struct {
  CCURL_FUNCTIONS(CCURL_POINTER)
} curl;
static char load_error[256];
static const char *loaded_version;
static pthread_once_t loading = PTHREAD_ONCE_INIT;

static void load(void) {
  void *library = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
  if (library == NULL) {
    snprintf(load_error, sizeof load_error, "libcurl is not installed (libcurl4): %s", dlerror());
    return;
  }
#define CCURL_FIND(name)                                                                       \
  if ((curl.p_##name = (__typeof__(name) *)dlsym(library, #name)) == NULL) {                   \
    snprintf(load_error, sizeof load_error, "libcurl.so.4 has no %s", #name);                  \
    return;                                                                                    \
  }
  CCURL_FUNCTIONS(CCURL_FIND)
  // Once, before any thread's handle (curl_global_init is not thread-safe before 7.84).
  CURLcode code = curl.p_curl_global_init(CURL_GLOBAL_DEFAULT);
  if (code != CURLE_OK) {
    snprintf(load_error, sizeof load_error, "libcurl did not start: %s", curl.p_curl_easy_strerror(code));
    return;
  }
  curl_version_info_data *info = curl.p_curl_version_info(CURLVERSION_NOW);
  // CURLOPT_PROTOCOLS_STR, which limits a request to https, came in 7.85 (bookworm has 7.88).
  if (info == NULL || info->version_num < 0x075500) {
    snprintf(load_error, sizeof load_error, "libcurl %s is older than 7.85", info ? info->version : "?");
    return;
  }
  loaded_version = info->version;
}

int ccurl_load(char *error, size_t error_size) {
  pthread_once(&loading, load);
  if (load_error[0] == 0) return 0;
  snprintf(error, error_size, "%s", load_error);
  return -1;
}

const char *ccurl_version(void) { return load_error[0] == 0 ? loaded_version : NULL; }

#define curl_easy_init (*curl.p_curl_easy_init)
// curl.h makes these two macros that check the argument count: undone for the pointers.
#undef curl_easy_setopt
#undef curl_easy_getinfo
#define curl_easy_setopt (*curl.p_curl_easy_setopt)
#define curl_easy_perform (*curl.p_curl_easy_perform)
#define curl_easy_getinfo (*curl.p_curl_easy_getinfo)
#define curl_easy_cleanup (*curl.p_curl_easy_cleanup)
#define curl_easy_strerror (*curl.p_curl_easy_strerror)
#define curl_slist_append (*curl.p_curl_slist_append)
#define curl_slist_free_all (*curl.p_curl_slist_free_all)

/// A growing buffer with a limit.
struct buffer {
  unsigned char *data;
  size_t length, capacity, limit;
};

static int append(struct buffer *buffer, const void *bytes, size_t count) {
  if (count > buffer->limit - buffer->length) return -1;
  if (buffer->length + count > buffer->capacity) {
    size_t capacity = buffer->capacity ? buffer->capacity : 1024;
    while (capacity < buffer->length + count) capacity *= 2;
    unsigned char *grown = realloc(buffer->data, capacity);
    if (grown == NULL) return -1;
    buffer->data = grown;
    buffer->capacity = capacity;
  }
  memcpy(buffer->data + buffer->length, bytes, count);
  buffer->length += count;
  return 0;
}

struct transfer {
  struct buffer head, body;
  const struct ccurl_request *request;
  int stopped, too_long;
};

static size_t on_header(char *bytes, size_t size, size_t count, void *context) {
  struct transfer *transfer = context;
  size_t length = size * count;
  // A new status line (after a 100 Continue, say): only the final response's fields are kept.
  if (length >= 5 && memcmp(bytes, "HTTP/", 5) == 0) transfer->head.length = 0;
  return append(&transfer->head, bytes, length) == 0 ? length : 0;
}

static size_t on_body(char *bytes, size_t size, size_t count, void *context) {
  struct transfer *transfer = context;
  size_t length = size * count;
  if (length > transfer->body.limit - transfer->body.length) {
    transfer->too_long = 1;
    return 0;
  }
  return append(&transfer->body, bytes, length) == 0 ? length : 0;
}

static int on_progress(void *context, curl_off_t download_total, curl_off_t downloaded, curl_off_t upload_total,
                       curl_off_t uploaded) {
  (void)download_total, (void)downloaded, (void)upload_total, (void)uploaded;
  struct transfer *transfer = context;
  if (transfer->request->should_stop && transfer->request->should_stop(transfer->request->stop_context)) {
    transfer->stopped = 1;
    return 1;
  }
  return 0;
}

static int is(const char *method, const char *name) { return strcmp(method, name) == 0; }

// Whether the transfer's connection was made (its TCP handshake done).
static int connected(CURL *handle) {
  curl_off_t microseconds = 0;
  return curl_easy_getinfo(handle, CURLINFO_CONNECT_TIME_T, &microseconds) == CURLE_OK && microseconds > 0;
}

enum ccurl_result ccurl_perform(const struct ccurl_request *request, struct ccurl_reply *reply, char *error,
                                size_t error_size) {
  memset(reply, 0, sizeof *reply);
  if (ccurl_load(error, error_size) != 0) return CCURL_UNREACHABLE;
  CURL *handle = curl_easy_init();
  if (handle == NULL) {
    snprintf(error, error_size, "libcurl could not make a handle");
    return CCURL_UNREACHABLE;
  }
  struct transfer transfer = {.head = {.limit = 64 * 1024}, .body = {.limit = request->reply_limit}, .request = request};
  struct curl_slist *headers = NULL;
  int ok = 1;
  for (int index = 0; index < request->header_count && ok; index++) {
    struct curl_slist *longer = curl_slist_append(headers, request->headers[index]);
    if (longer == NULL) ok = 0; else headers = longer;
  }
  // No "Expect: 100-continue" (libcurl's for a large body): a server that ignores it would hold
  // every upload a second.
  struct curl_slist *longer = ok ? curl_slist_append(headers, "Expect:") : NULL;
  if (longer == NULL) {
    curl_slist_free_all(headers);
    curl_easy_cleanup(handle);
    snprintf(error, error_size, "out of memory for the request's headers");
    return CCURL_UNREACHABLE;
  }
  headers = longer;

  char detail[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, detail);
  curl_easy_setopt(handle, CURLOPT_URL, request->url);
  // Redirects are the conversation's to judge: following one to another host would hand it the
  // Authorization header.
  curl_easy_setopt(handle, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(handle, CURLOPT_PROTOCOLS_STR, request->allow_http ? "https,http" : "https");
  curl_easy_setopt(handle, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(handle, CURLOPT_SSL_VERIFYHOST, 2L);
  if (request->ca_file) curl_easy_setopt(handle, CURLOPT_CAINFO, request->ca_file);
  // Threads: no SIGALRM for DNS timeouts (libcurl's "MT-safety" rule).
  curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT, request->connect_timeout_seconds);
  curl_easy_setopt(handle, CURLOPT_LOW_SPEED_LIMIT, request->low_speed_bytes_per_second);
  curl_easy_setopt(handle, CURLOPT_LOW_SPEED_TIME, request->low_speed_seconds);
  curl_easy_setopt(handle, CURLOPT_USERAGENT, "workoutd");
  curl_easy_setopt(handle, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(handle, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(handle, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(handle, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(handle, CURLOPT_XFERINFODATA, &transfer);
  if (is(request->method, "HEAD")) {
    curl_easy_setopt(handle, CURLOPT_NOBODY, 1L);
  } else if (is(request->method, "GET") && request->body_length == 0) {
    curl_easy_setopt(handle, CURLOPT_HTTPGET, 1L);
  } else {
    if (request->body_length > 0 || is(request->method, "POST") || is(request->method, "PUT")) {
      // The body is the caller's, sent as it is (not copied: it lives through the call).
      curl_easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)request->body_length);
      curl_easy_setopt(handle, CURLOPT_POSTFIELDS, request->body_length ? (const char *)request->body : "");
    }
    if (!is(request->method, "POST")) curl_easy_setopt(handle, CURLOPT_CUSTOMREQUEST, request->method);
  }

  CURLcode code = curl_easy_perform(handle);
  enum ccurl_result result = CCURL_ANSWERED;
  if (transfer.stopped) {
    snprintf(error, error_size, "stopped");
    result = CCURL_STOPPED;
  } else if (code != CURLE_OK) {
    long os_error = 0;
    curl_easy_getinfo(handle, CURLINFO_OS_ERRNO, &os_error);
    if (transfer.too_long) {
      snprintf(error, error_size, "the reply is longer than %zu bytes", transfer.body.limit);
    } else if ((code == CURLE_COULDNT_CONNECT && os_error == EPERM) ||
               (code == CURLE_OPERATION_TIMEDOUT && !connected(handle))) {
      // The system refused the connection (a firewall's rule: EPERM), or nothing answered it: no
      // route, or a unit's IPAddressDeny dropping the packets (the service's own, when it sends
      // without workoutd-upload.socket), which looks the same from here.
      snprintf(error, error_size,
               "%s: no connection (the network, a firewall, or a unit's IPAddressDeny: the service's own "
               "reaches only the local network, and sends through workoutd-upload.socket: README, Uploads)",
               detail[0] ? detail : curl_easy_strerror(code));
    } else if (detail[0]) {
      snprintf(error, error_size, "%s: %s", curl_easy_strerror(code), detail);
    } else {
      snprintf(error, error_size, "%s", curl_easy_strerror(code));
    }
    result = CCURL_UNREACHABLE;
  } else {
    curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &reply->status);
    reply->head = (char *)transfer.head.data;
    reply->head_length = transfer.head.length;
    reply->body = transfer.body.data;
    reply->body_length = transfer.body.length;
    transfer.head.data = transfer.body.data = NULL;
  }
  free(transfer.head.data);
  free(transfer.body.data);
  curl_slist_free_all(headers);
  curl_easy_cleanup(handle);
  return result;
}

void ccurl_reply_free(struct ccurl_reply *reply) {
  free(reply->head);
  free(reply->body);
  reply->head = NULL;
  reply->body = NULL;
}
