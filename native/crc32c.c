// CRC-32C (Castagnoli, as in Kafka record batches) for Skiff: the SSE4.2 crc32 instruction run on three
// independent streams at once (its latency is three cycles, its throughput one per cycle), the three
// partial CRCs joined by a "shift by N zero bytes" operator applied through four 256-entry tables.
// A byte-table loop where the CPU lacks SSE4.2. Loaded by src/protocol/records/crc32c.ts; when this
// addon was not built, that module falls back to @node-rs/crc32 (one stream, about 4x slower here).
#include <node_api.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

#define POLY 0x82f63b78u
#define LONG_BLOCK 8192
#define SHORT_BLOCK 256

static uint32_t byte_table[256];
static uint32_t shift_long[4][256];
static uint32_t shift_short[4][256];
static int have_hw = 0;

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
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t n) {
  while (n > 0 && ((uintptr_t)p & 7) != 0) {
    crc = _mm_crc32_u8(crc, *p++);
    n--;
  }
  uint64_t c0 = crc;
  while (n >= 3 * LONG_BLOCK) {
    uint64_t c1 = 0, c2 = 0;
    const uint8_t *end = p + LONG_BLOCK;
    do {
      uint64_t a, b, c;
      memcpy(&a, p, 8);
      memcpy(&b, p + LONG_BLOCK, 8);
      memcpy(&c, p + 2 * LONG_BLOCK, 8);
      c0 = _mm_crc32_u64(c0, a);
      c1 = _mm_crc32_u64(c1, b);
      c2 = _mm_crc32_u64(c2, c);
      p += 8;
    } while (p < end);
    c0 = shift(shift_long, (uint32_t)c0) ^ (uint32_t)c1;
    c0 = shift(shift_long, (uint32_t)c0) ^ (uint32_t)c2;
    p += 2 * LONG_BLOCK;
    n -= 3 * LONG_BLOCK;
  }
  while (n >= 3 * SHORT_BLOCK) {
    uint64_t c1 = 0, c2 = 0;
    const uint8_t *end = p + SHORT_BLOCK;
    do {
      uint64_t a, b, c;
      memcpy(&a, p, 8);
      memcpy(&b, p + SHORT_BLOCK, 8);
      memcpy(&c, p + 2 * SHORT_BLOCK, 8);
      c0 = _mm_crc32_u64(c0, a);
      c1 = _mm_crc32_u64(c1, b);
      c2 = _mm_crc32_u64(c2, c);
      p += 8;
    } while (p < end);
    c0 = shift(shift_short, (uint32_t)c0) ^ (uint32_t)c1;
    c0 = shift(shift_short, (uint32_t)c0) ^ (uint32_t)c2;
    p += 2 * SHORT_BLOCK;
    n -= 3 * SHORT_BLOCK;
  }
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

// crc32c(view: ArrayBufferView, start: number, end: number): number — CRC-32C of view[start..end).
static napi_value js_crc32c(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return NULL;
  napi_typedarray_type type;
  size_t length = 0;
  void *data = NULL;
  if (argc < 3 || napi_get_typedarray_info(env, argv[0], &type, &length, &data, NULL, NULL) != napi_ok ||
      type != napi_uint8_array) {
    napi_throw_type_error(env, NULL, "crc32c: expected (Uint8Array, start, end)");
    return NULL;
  }
  double start = 0, end = 0;
  if (napi_get_value_double(env, argv[1], &start) != napi_ok ||
      napi_get_value_double(env, argv[2], &end) != napi_ok || !(start >= 0) || !(end >= start) ||
      end > (double)length) {
    napi_throw_range_error(env, NULL, "crc32c: range outside the buffer");
    return NULL;
  }
  const uint8_t *p = (const uint8_t *)data + (size_t)start;
  size_t n = (size_t)end - (size_t)start;
  uint32_t crc = have_hw ? crc_hw(0xffffffffu, p, n) : crc_sw(0xffffffffu, p, n);
  napi_value result;
  napi_create_uint32(env, crc ^ 0xffffffffu, &result);
  return result;
}

NAPI_MODULE_INIT() {
  init_byte_table();
  init_shift(shift_long, LONG_BLOCK);
  init_shift(shift_short, SHORT_BLOCK);
#if defined(__x86_64__)
  __builtin_cpu_init();
  have_hw = __builtin_cpu_supports("sse4.2");
#endif
  napi_value fn, hw;
  napi_create_function(env, "crc32c", NAPI_AUTO_LENGTH, js_crc32c, NULL, &fn);
  napi_set_named_property(env, exports, "crc32c", fn);
  napi_get_boolean(env, have_hw, &hw);
  napi_set_named_property(env, exports, "hardware", hw);
  return exports;
}
