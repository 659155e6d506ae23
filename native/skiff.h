// What the addon's source files share: each registers its functions on the module's exports.
#ifndef SKIFF_NATIVE_H
#define SKIFF_NATIVE_H
#include <node_api.h>
#include <stdint.h>

// exports[name] = a function calling cb (crc32c.c).
void skiff_set_function(napi_env env, napi_value exports, const char *name, napi_callback cb);
// A JS number from an int64 (the -errno results of the system-call wrappers).
napi_value skiff_int64(napi_env env, int64_t value);

// native/memory.c: tuneMalloc, mapZeroed; native/sendfile.c: sendfile, setReceiveLowWater;
// native/preallocate.c: preallocate.
void skiff_register_memory(napi_env env, napi_value exports);
void skiff_register_sendfile(napi_env env, napi_value exports);
void skiff_register_preallocate(napi_env env, napi_value exports);
#endif
