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

// adviseHugePages(arrayBuffer): asks for transparent huge pages (THP "madvise" mode) on the 2 MiB
// pages inside the buffer's memory; true when the advice was taken. For a large table read at
// random places — the log cleaner's offset map, 128 MiB by default — where each access to a new
// 4 KiB page misses the TLB: on a VM (nested paging) a put into a 128 MiB map cost ~1.2 µs against
// ~0.3 µs into a 1 MiB one, almost all of it the page walk.
static napi_value js_advise_huge_pages(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  int advised = 0;
  void *data = NULL;
  size_t length = 0;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) == napi_ok && argc == 1 &&
      napi_get_arraybuffer_info(env, argv[0], &data, &length) == napi_ok && data != NULL) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    uintptr_t start = ((uintptr_t)data + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
    uintptr_t end = ((uintptr_t)data + length) & ~(uintptr_t)(HUGE_PAGE - 1);
    advised = end > start && madvise((void *)start, end - start, MADV_HUGEPAGE) == 0;
#endif
  }
  napi_value result;
  napi_get_boolean(env, advised, &result);
  return result;
}

void skiff_register_memory(napi_env env, napi_value exports) {
  skiff_set_function(env, exports, "tuneMalloc", js_tune_malloc);
  skiff_set_function(env, exports, "adviseHugePages", js_advise_huge_pages);
}
