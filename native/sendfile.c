// sendfile(2) for Fetch responses (Linux only): stored bytes go from the page cache to a socket
// without being copied into the process and out again — Kafka's zero-copy transferTo. The call is
// made on the broker's non-blocking socket, so it never waits: it sends what the socket buffer
// takes and returns the count, or -EAGAIN when it takes nothing; the caller sends the rest through
// the socket's ordinary (queued) writes.
#include <node_api.h>
#include "skiff.h"
#include <errno.h>
#include <stdint.h>
#if defined(__linux__)
#include <sys/sendfile.h>
#include <sys/socket.h>
#endif

// sendfile(socketFd, fileFd, position, length) -> bytes sent (0 at the end of the file) or -errno.
static napi_value js_sendfile(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  int32_t out_fd = -1, in_fd = -1;
  int64_t position = 0, length = 0;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 4 ||
      napi_get_value_int32(env, argv[0], &out_fd) != napi_ok ||
      napi_get_value_int32(env, argv[1], &in_fd) != napi_ok ||
      napi_get_value_int64(env, argv[2], &position) != napi_ok ||
      napi_get_value_int64(env, argv[3], &length) != napi_ok || position < 0 || length < 0) {
    napi_throw_type_error(env, NULL, "sendfile(socketFd, fileFd, position, length): bad arguments");
    return NULL;
  }
  int64_t result;
#if defined(__linux__)
  off_t offset = (off_t)position;
  ssize_t n;
  do {
    n = sendfile(out_fd, in_fd, &offset, (size_t)length);
  } while (n < 0 && errno == EINTR);
  result = n < 0 ? -(int64_t)errno : (int64_t)n;
#else
  (void)out_fd;
  (void)in_fd;
  result = -ENOSYS;
#endif
  return skiff_int64(env, result);
}

// setReceiveLowWater(socketFd, bytes) -> 0 or -errno: SO_RCVLOWAT, the bytes a socket must hold
// before the event loop is told it is readable. A reader that knows how much of a frame is still
// to come asks for that much, and is woken once instead of for every piece that arrives.
static napi_value js_set_receive_low_water(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  int32_t fd = -1, bytes = 1;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2 ||
      napi_get_value_int32(env, argv[0], &fd) != napi_ok ||
      napi_get_value_int32(env, argv[1], &bytes) != napi_ok || bytes < 1) {
    napi_throw_type_error(env, NULL, "setReceiveLowWater(socketFd, bytes): bad arguments");
    return NULL;
  }
  int64_t result;
#if defined(__linux__)
  result = setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &bytes, sizeof bytes) == 0 ? 0 : -(int64_t)errno;
#else
  (void)fd;
  result = -ENOSYS;
#endif
  return skiff_int64(env, result);
}

void skiff_register_sendfile(napi_env env, napi_value exports) {
  skiff_set_function(env, exports, "sendfile", js_sendfile);
  skiff_set_function(env, exports, "setReceiveLowWater", js_set_receive_low_water);
}
