// CRC-32C (Castagnoli, as in Kafka record batches) for Skiff, three ways, fastest first:
//  - AVX-512 VPCLMULQDQ (n >= 256 bytes): four 64-byte registers of 16-byte lanes folded forward by
//    carry-less multiplication with constants x^k mod P, reduced to one lane, which the crc32
//    instruction then finishes (the lane stands for everything before it);
//  - the SSE4.2 crc32 instruction on three independent streams at once (latency three cycles,
//    throughput one per cycle), the partial CRCs joined by a "shift by N zero bytes" operator
//    applied through four 256-entry tables;
//  - a byte-table loop where the CPU lacks SSE4.2.
// Loaded by src/protocol/records/crc32c.ts; when this addon was not built, that module falls back
// to @node-rs/crc32 (one stream, about 4x slower than the three streams here).
#include <node_api.h>
#include "skiff.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#define POLY 0x82f63b78u
#define LONG_BLOCK 8192
#define SHORT_BLOCK 256

static uint32_t byte_table[256];
static uint32_t shift_long[4][256];
static uint32_t shift_short[4][256];
static int have_hw = 0;
/* AVX-512 with VPCLMULQDQ: 64-byte lanes folded by carry-less multiplication, ~2x the crc32 streams. */
static int have_vpclmul = 0;

static void init_byte_table(void) {
  for (uint32_t n = 0; n < 256; n++) {
    uint32_t c = n;
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
    byte_table[n] = c;
  }
}

// The raw CRC register after `len` zero bytes, from `crc`.
static uint32_t zeros(uint32_t crc, size_t len) {
  while (len--) crc = byte_table[crc & 0xff] ^ (crc >> 8);
  return crc;
}

// Tables for the operator "append len zero bytes", applied a byte of the register at a time.
static void init_shift(uint32_t table[4][256], size_t len) {
  uint32_t basis[32];
  for (int b = 0; b < 32; b++) basis[b] = zeros(1u << b, len);
  for (int k = 0; k < 4; k++) {
    for (uint32_t n = 0; n < 256; n++) {
      uint32_t v = 0;
      for (int b = 0; b < 8; b++)
        if (n & (1u << b)) v ^= basis[8 * k + b];
      table[k][n] = v;
    }
  }
}

static inline uint32_t shift(uint32_t table[4][256], uint32_t crc) {
  return table[0][crc & 0xff] ^ table[1][(crc >> 8) & 0xff] ^ table[2][(crc >> 16) & 0xff] ^
         table[3][crc >> 24];
}

static uint32_t crc_sw(uint32_t crc, const uint8_t *p, size_t n) {
  while (n--) crc = byte_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
// While at least three blocks remain: the crc32 instruction on three independent streams, one per
// block, the partial CRCs joined by the "shift by one block of zeros" table. Inlined with a
// constant block size for each of the two block sizes.
static inline __attribute__((always_inline, target("sse4.2"))) uint64_t crc_three_streams(
    uint64_t c0, const uint8_t **pp, size_t *np, size_t block, uint32_t table[4][256]) {
  const uint8_t *p = *pp;
  size_t n = *np;
  while (n >= 3 * block) {
    uint64_t c1 = 0, c2 = 0;
    const uint8_t *end = p + block;
    do {
      uint64_t a, b, c;
      memcpy(&a, p, 8);
      memcpy(&b, p + block, 8);
      memcpy(&c, p + 2 * block, 8);
      c0 = _mm_crc32_u64(c0, a);
      c1 = _mm_crc32_u64(c1, b);
      c2 = _mm_crc32_u64(c2, c);
      p += 8;
    } while (p < end);
    c0 = shift(table, (uint32_t)c0) ^ (uint32_t)c1;
    c0 = shift(table, (uint32_t)c0) ^ (uint32_t)c2;
    p += 2 * block;
    n -= 3 * block;
  }
  *pp = p;
  *np = n;
  return c0;
}

__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t n) {
  while (n > 0 && ((uintptr_t)p & 7) != 0) {
    crc = _mm_crc32_u8(crc, *p++);
    n--;
  }
  uint64_t c0 = crc;
  c0 = crc_three_streams(c0, &p, &n, LONG_BLOCK, shift_long);
  c0 = crc_three_streams(c0, &p, &n, SHORT_BLOCK, shift_short);
  while (n >= 8) {
    uint64_t a;
    memcpy(&a, p, 8);
    c0 = _mm_crc32_u64(c0, a);
    p += 8;
    n -= 8;
  }
  crc = (uint32_t)c0;
  while (n--) crc = _mm_crc32_u8(crc, *p++);
  return crc;
}
#else
static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t n) { return crc_sw(crc, p, n); }
#endif

#if defined(__x86_64__)
// Folding, in the reflected bit order of this CRC: a 16-byte lane X (loaded little-endian) at byte p
// contributes the same to the CRC as clmul(X.lo, rev(x^(8D+32) mod P) << 1) ^ clmul(X.hi,
// rev(x^(8D-32) mod P) << 1) placed D bytes later (the << 1 absorbs the one-bit offset of a
// reflected carry-less product). rev32(x^n mod P) << 1: the reflected residue of x^n, which is n
// zero-bit steps of the CRC register from 0x80000000 (x^0).
static uint64_t xpow_const(unsigned n) {
  uint32_t r = 0x80000000u;
  while (n--) r = (r & 1) ? (r >> 1) ^ POLY : r >> 1;
  return (uint64_t)r << 1;
}
// Folding 16-byte lanes forward by `bytes`: low qword times x^(8*bytes+32), high qword times x^(8*bytes-32).
static uint64_t fold_k[5][2]; // 256, 64, 48, 32, 16 bytes: {low qword constant, high qword constant}
static void init_fold(void) {
  const unsigned d[5] = {256, 64, 48, 32, 16};
  for (int i = 0; i < 5; i++) {
    fold_k[i][0] = xpow_const(8 * d[i] + 32);
    fold_k[i][1] = xpow_const(8 * d[i] - 32);
  }
}
__attribute__((target("avx512f,avx512bw,avx512vl,vpclmulqdq,pclmul,sse4.2")))
static inline __m512i fold512(__m512i x, __m512i k, __m512i data) {
  __m512i lo = _mm512_clmulepi64_epi128(x, k, 0x00);
  __m512i hi = _mm512_clmulepi64_epi128(x, k, 0x11);
  return _mm512_ternarylogic_epi64(lo, hi, data, 0x96);
}
__attribute__((target("pclmul,sse4.2")))
static inline __m128i fold128(__m128i x, __m128i k, __m128i data) {
  __m128i lo = _mm_clmulepi64_si128(x, k, 0x00);
  __m128i hi = _mm_clmulepi64_si128(x, k, 0x11);
  return _mm_xor_si128(_mm_xor_si128(lo, hi), data);
}
// Raw CRC register `crc` over n >= 256 bytes.
__attribute__((target("avx512f,avx512bw,avx512vl,vpclmulqdq,pclmul,sse4.2")))
static uint32_t crc_vpclmul(uint32_t crc, const uint8_t *p, size_t n) {
  const __m512i k256 = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)fold_k[0]));
  const __m512i k64 = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)fold_k[1]));
  const __m128i k48 = _mm_loadu_si128((const __m128i *)fold_k[2]);
  const __m128i k32 = _mm_loadu_si128((const __m128i *)fold_k[3]);
  const __m128i k16 = _mm_loadu_si128((const __m128i *)fold_k[4]);
  __m512i z0 = _mm512_loadu_si512((const void *)p);
  __m512i z1 = _mm512_loadu_si512((const void *)(p + 64));
  __m512i z2 = _mm512_loadu_si512((const void *)(p + 128));
  __m512i z3 = _mm512_loadu_si512((const void *)(p + 192));
  // The register joins the first four bytes: crc(c, M) = crc(0, M ^ c).
  z0 = _mm512_xor_si512(z0, _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)crc)));
  p += 256; n -= 256;
  while (n >= 256) {
    z0 = fold512(z0, k256, _mm512_loadu_si512((const void *)p));
    z1 = fold512(z1, k256, _mm512_loadu_si512((const void *)(p + 64)));
    z2 = fold512(z2, k256, _mm512_loadu_si512((const void *)(p + 128)));
    z3 = fold512(z3, k256, _mm512_loadu_si512((const void *)(p + 192)));
    p += 256; n -= 256;
  }
  z1 = fold512(z0, k64, z1);
  z2 = fold512(z1, k64, z2);
  z3 = fold512(z2, k64, z3);
  __m128i a = _mm512_extracti32x4_epi32(z3, 0), b = _mm512_extracti32x4_epi32(z3, 1);
  __m128i c = _mm512_extracti32x4_epi32(z3, 2), d = _mm512_extracti32x4_epi32(z3, 3);
  __m128i x = fold128(a, k48, d);
  x = fold128(b, k32, x);
  x = fold128(c, k16, x);
  uint64_t c0 = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(x));
  c0 = _mm_crc32_u64(c0, (uint64_t)_mm_extract_epi64(x, 1));
  while (n >= 8) { uint64_t v; memcpy(&v, p, 8); c0 = _mm_crc32_u64(c0, v); p += 8; n -= 8; }
  uint32_t r = (uint32_t)c0;
  while (n--) r = _mm_crc32_u8(r, *p++);
  return r;
}
#endif

// The bytes view[start..end) of a call (view: Uint8Array, start: number, end: number); false after
// throwing a JS error for bad arguments.
static int range_of(napi_env env, napi_callback_info info, const uint8_t **p, size_t *n) {
  size_t argc = 3;
  napi_value argv[3];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return 0;
  napi_typedarray_type type;
  size_t length = 0;
  void *data = NULL;
  if (argc < 3 || napi_get_typedarray_info(env, argv[0], &type, &length, &data, NULL, NULL) != napi_ok ||
      type != napi_uint8_array) {
    napi_throw_type_error(env, NULL, "crc32c: expected (Uint8Array, start, end)");
    return 0;
  }
  double start = 0, end = 0;
  if (napi_get_value_double(env, argv[1], &start) != napi_ok ||
      napi_get_value_double(env, argv[2], &end) != napi_ok || !(start >= 0) || !(end >= start) ||
      end > (double)length) {
    napi_throw_range_error(env, NULL, "crc32c: range outside the buffer");
    return 0;
  }
  *p = (const uint8_t *)data + (size_t)start;
  *n = (size_t)end - (size_t)start;
  return 1;
}

static napi_value uint32_value(napi_env env, uint32_t v) {
  napi_value result;
  napi_create_uint32(env, v, &result);
  return result;
}

// crc32c(view, start, end): CRC-32C of view[start..end), by the fastest path this CPU has.
static napi_value js_crc32c(napi_env env, napi_callback_info info) {
  const uint8_t *p;
  size_t n;
  if (!range_of(env, info, &p, &n)) return NULL;
  uint32_t crc;
#if defined(__x86_64__)
  if (have_vpclmul && n >= 256)
    crc = crc_vpclmul(0xffffffffu, p, n);
  else
#endif
    crc = have_hw ? crc_hw(0xffffffffu, p, n) : crc_sw(0xffffffffu, p, n);
  return uint32_value(env, crc ^ 0xffffffffu);
}

// crc32cStreams(view, start, end): the same through the three crc32 streams only (tests, bench).
static napi_value js_crc32c_streams(napi_env env, napi_callback_info info) {
  const uint8_t *p;
  size_t n;
  if (!range_of(env, info, &p, &n)) return NULL;
  uint32_t crc = have_hw ? crc_hw(0xffffffffu, p, n) : crc_sw(0xffffffffu, p, n);
  return uint32_value(env, crc ^ 0xffffffffu);
}

void skiff_set_function(napi_env env, napi_value exports, const char *name, napi_callback cb) {
  napi_value fn;
  napi_create_function(env, name, NAPI_AUTO_LENGTH, cb, NULL, &fn);
  napi_set_named_property(env, exports, name, fn);
}

napi_value skiff_int64(napi_env env, int64_t value) {
  napi_value v;
  napi_create_int64(env, value, &v);
  return v;
}

static void set_boolean(napi_env env, napi_value exports, const char *name, int value) {
  napi_value v;
  napi_get_boolean(env, value, &v);
  napi_set_named_property(env, exports, name, v);
}


NAPI_MODULE_INIT() {
  init_byte_table();
  init_shift(shift_long, LONG_BLOCK);
  init_shift(shift_short, SHORT_BLOCK);
#if defined(__x86_64__)
  __builtin_cpu_init();
  have_hw = __builtin_cpu_supports("sse4.2");
  have_vpclmul = have_hw && __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("avx512f") &&
                 __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                 __builtin_cpu_supports("vpclmulqdq") && getenv("SKIFF_CRC_NO_AVX512") == NULL;
  init_fold();
#endif
  skiff_set_function(env, exports, "crc32c", js_crc32c);
  skiff_set_function(env, exports, "crc32cStreams", js_crc32c_streams);
  set_boolean(env, exports, "hardware", have_hw);
  set_boolean(env, exports, "vpclmul", have_vpclmul);
  skiff_register_memory(env, exports);
  skiff_register_sendfile(env, exports);
  skiff_register_preallocate(env, exports);
  return exports;
}
