// Heap tuning for a broker process (glibc only). Produce data arrives through Node's socket reads
// into fresh 64 KiB buffers; glibc's default trim threshold hands the freed memory back to the
// kernel almost at once, so the next reads fault fresh pages in again — on a VM that returns freed
// memory to its host each 4 KiB page costs tens of microseconds, and the broker bench measured
// about twice the broker CPU per produce because of it. tuneMalloc keeps freed memory in the arena
// (trim threshold 256 MiB, top pad 64 MiB) and serves buffers up to 32 MiB from it rather than
// from fresh mmaps (fixing the trim threshold also stops glibc's dynamic mmap threshold, so the
// mmap threshold is fixed too). Memory is still returned above 256 MiB of free heap.
#include <node_api.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#define MIB (1024 * 1024)

// tuneMalloc(): true when the settings were applied (glibc), false elsewhere.
static napi_value js_tune_malloc(napi_env env, napi_callback_info info) {
  (void)info;
  int applied = 0;
#if defined(__GLIBC__)
  applied = mallopt(M_MMAP_THRESHOLD, 32 * MIB) == 1 && mallopt(M_TRIM_THRESHOLD, 256 * MIB) == 1 &&
            mallopt(M_TOP_PAD, 64 * MIB) == 1;
#endif
  napi_value result;
  napi_get_boolean(env, applied, &result);
  return result;
}

void skiff_register_memory(napi_env env, napi_value exports) {
  napi_value fn;
  napi_create_function(env, "tuneMalloc", NAPI_AUTO_LENGTH, js_tune_malloc, NULL, &fn);
  napi_set_named_property(env, exports, "tuneMalloc", fn);
}
