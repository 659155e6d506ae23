// Heap tuning for a broker process (glibc only). Produce data arrives through Node's socket reads
// into fresh 64 KiB buffers; glibc's default trim threshold hands the freed memory back to the
// kernel almost at once, so the next reads fault fresh pages in again — on a VM that returns freed
// memory to its host each 4 KiB page costs tens of microseconds, and the broker bench measured
// about twice the broker CPU per produce because of it. tuneMalloc keeps freed memory in the arena
// (trim threshold 256 MiB, top pad 64 MiB) and serves buffers up to 32 MiB from it rather than
// from fresh mmaps (fixing the trim threshold also stops glibc's dynamic mmap threshold, so the
// mmap threshold is fixed too). Memory is still returned above 256 MiB of free heap.
#include <node_api.h>
#include "skiff.h"
#include <stdint.h>
#include <stdlib.h>
#if defined(__GLIBC__)
#include <malloc.h>
#include <unistd.h>
#endif
#if defined(__linux__)
#include <sys/mman.h>
#endif

#define MIB (1024 * 1024)
#define HUGE_PAGE (2 * MIB)

#if defined(__GLIBC__)
#define HEAP_RESERVE_CHUNKS 4
// Grows the main heap by ~120 MiB (four 30 MiB blocks, each under the mmap threshold, so they come
// from brk; with the top pad the heap reaches ~180 MiB of address space) and asks for transparent
// huge pages on it (THP "madvise" mode), then frees the blocks: they stay in the arena (trim
// threshold) untouched, so RSS does not grow until the memory is used, and its first use faults
// 2 MiB pages instead of 512 separate 4 KiB ones. A fresh broker's first 100 MB of kcat produce
// took 0.36-0.42 s of broker CPU with it, 0.55 s without (the page faults of a VM are dear).
static void grow_heap_with_huge_pages(void) {
  void *blocks[HEAP_RESERVE_CHUNKS];
  for (int i = 0; i < HEAP_RESERVE_CHUNKS; i++) blocks[i] = malloc(30 * MIB);
  uintptr_t start = (uintptr_t)blocks[0];
  uintptr_t end = (uintptr_t)sbrk(0);
  for (int i = 0; i < HEAP_RESERVE_CHUNKS; i++)
    if (blocks[i] != NULL && (uintptr_t)blocks[i] < start) start = (uintptr_t)blocks[i];
  start = (start + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
  end &= ~(uintptr_t)(HUGE_PAGE - 1);
#if defined(MADV_HUGEPAGE)
  if (blocks[0] != NULL && end > start) madvise((void *)start, end - start, MADV_HUGEPAGE);
#endif
  for (int i = HEAP_RESERVE_CHUNKS - 1; i >= 0; i--) free(blocks[i]);
}
#endif

// tuneMalloc(): true when the settings were applied (glibc), false elsewhere.
static napi_value js_tune_malloc(napi_env env, napi_callback_info info) {
  (void)info;
  int applied = 0;
#if defined(__GLIBC__)
  applied = mallopt(M_MMAP_THRESHOLD, 32 * MIB) == 1 && mallopt(M_TRIM_THRESHOLD, 256 * MIB) == 1 &&
            mallopt(M_TOP_PAD, 64 * MIB) == 1;
  if (applied) grow_heap_with_huge_pages();
#endif
  napi_value result;
  napi_get_boolean(env, applied, &result);
  return result;
}

// mapZeroed(bytes): an ArrayBuffer of `bytes` zero bytes in its own anonymous mapping, transparent
// huge pages asked for (THP "madvise" mode), unmapped when the buffer is collected; null when the
// mapping fails. For the log cleaner's offset map (128 MiB by default), read at random places,
// where each access to a new 4 KiB page misses the TLB: on a VM (nested paging) a put into a
// 128 MiB map cost ~1.2 us against ~0.3 us into a 1 MiB one, almost all of it the page walk. Its
// own mapping, not the heap: with tuneMalloc's grown heap a 128 MiB calloc is served from the heap
// top, which glibc zeroes with memset — the whole map made resident at once (~170-560 ms of a
// broker's start-up, +128 MiB of RSS per broker); a fresh mapping's zero pages come only as the map
// is used.
static void unmap_finalizer(napi_env env, void *data, void *hint) {
  (void)env;
  munmap(data, (size_t)(uintptr_t)hint);
}

static napi_value js_map_zeroed(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_value result;
  napi_get_null(env, &result);
#if defined(__linux__)
  double requested = 0;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 1 ||
      napi_get_value_double(env, argv[0], &requested) != napi_ok || !(requested >= 1) ||
      requested > (double)SIZE_MAX / 2)
    return result;
  size_t length = (size_t)requested;
  void *data = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (data == MAP_FAILED) return result;
#if defined(MADV_HUGEPAGE)
  uintptr_t start = ((uintptr_t)data + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
  uintptr_t end = ((uintptr_t)data + length) & ~(uintptr_t)(HUGE_PAGE - 1);
  if (end > start) madvise((void *)start, end - start, MADV_HUGEPAGE);
#endif
  napi_value buffer;
  if (napi_create_external_arraybuffer(env, data, length, unmap_finalizer, (void *)(uintptr_t)length,
                                       &buffer) != napi_ok) {
    munmap(data, length);
    return result;
  }
  result = buffer;
#else
  (void)info;
  (void)argc;
  (void)argv;
#endif
  return result;
}

void skiff_register_memory(napi_env env, napi_value exports) {
  skiff_set_function(env, exports, "tuneMalloc", js_tune_malloc);
  skiff_set_function(env, exports, "mapZeroed", js_map_zeroed);
}
