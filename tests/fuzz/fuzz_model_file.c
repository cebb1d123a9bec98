/* libFuzzer target for the model/checkpoint file parser (lib/serialize.c).
 *
 * Each input is tried two ways:
 *
 *  1. As a whole file: ram_file_verify (magic, version, chunk walk, END chunk,
 *     CRC; the code ram_file_read runs after reading) and, if it passes,
 *     ram_model_deserialize, as ram_model_load does.
 *
 *  2. Since the CRC makes almost every mutated file fail in step 1, the input
 *     is also rewrapped into a valid container so that the post-CRC parser
 *     sees attacker-controlled ARCH and WGHT chunks: a leading file header
 *     (magic, version, kind) is skipped, the rest is read as chunks (tag,
 *     reserved, length, payload) with each length clamped to the bytes left,
 *     a chunk tagged END stops the walk, and a correct END chunk and CRC are
 *     appended.  A mutated seed file so keeps its chunk structure but gets a
 *     valid checksum.
 *
 * Whatever deserializes must serialize back to the same ARCH fields and the
 * same WGHT chunk, or the target aborts.  See tests/fuzz/README.md. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const unsigned char MAGIC[8] = {0x89, 'R', 'A', 'M', '\r', '\n', 0x1a, '\n'};
#define TAG_END   RAM_TAG('E', 'N', 'D', ' ')
#define ARCH_SIZE 80 /* the fields version 1 defines; longer payloads are allowed */

static uint32_t get_u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const unsigned char *p) {
    return get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

static void fail(const char *what) {
    fprintf(stderr, "fuzz_model_file: %s (last error: %s)\n", what, ram_last_error());
    abort();
}

/* A parsed model must write back what was read. */
static void check_round_trip(const unsigned char *file, size_t len, const struct ram_model *m) {
    ram_reader a, w, a2, w2;
    if (!ram_file_find(file, len, RAM_TAG('A', 'R', 'C', 'H'), &a) ||
        !ram_file_find(file, len, RAM_TAG('W', 'G', 'H', 'T'), &w))
        fail("deserialized a file without ARCH or WGHT");
    ram_buf b = {0};
    ram_file_begin(&b);
    ram_model_serialize(m, &b);
    ram_buf_u32(&b, TAG_END); /* ram_file_find stops at END */
    ram_buf_u32(&b, 0);
    ram_buf_u64(&b, 4);
    ram_buf_u32(&b, 0);
    if (b.failed) fail("out of memory serializing");
    if (!ram_file_find(b.data, b.len, RAM_TAG('A', 'R', 'C', 'H'), &a2) ||
        !ram_file_find(b.data, b.len, RAM_TAG('W', 'G', 'H', 'T'), &w2))
        fail("serialized model lacks ARCH or WGHT");
    if (a2.len != ARCH_SIZE || a.len < ARCH_SIZE || memcmp(a.p, a2.p, ARCH_SIZE) != 0)
        fail("ARCH does not round-trip");
    if (w.len != w2.len || memcmp(w.p, w2.p, w.len) != 0) fail("WGHT does not round-trip");
    free(b.data);
}

static void parse(const unsigned char *file, size_t len) {
    struct ram_model *m = NULL;
    if (ram_model_deserialize(file, len, &m) == RAM_OK) {
        if (!m) fail("RAM_OK without a model");
        check_round_trip(file, len, m);
        ram_model_free(m);
    }
}

/* Step 2: the input's chunks in a container with a correct END chunk and CRC. */
static void parse_wrapped(const unsigned char *data, size_t size) {
    if (size >= 16 && memcmp(data, MAGIC, 8) == 0) {
        data += 16;
        size -= 16;
    }
    ram_buf b = {0};
    ram_file_begin(&b);
    while (size >= 16) {
        uint32_t tag = get_u32(data), reserved = get_u32(data + 4);
        uint64_t clen = get_u64(data + 8);
        data += 16;
        size -= 16;
        if (tag == TAG_END) break;
        if (clen > size) clen = size;
        ram_buf_u32(&b, tag);
        ram_buf_u32(&b, reserved);
        ram_buf_u64(&b, clen);
        ram_buf_bytes(&b, data, (size_t)clen);
        data += clen;
        size -= (size_t)clen;
    }
    if (!b.failed) {
        uint32_t crc = ram_crc32(b.data, b.len);
        ram_buf_u32(&b, TAG_END);
        ram_buf_u32(&b, 0);
        ram_buf_u64(&b, 4);
        ram_buf_u32(&b, crc);
    }
    if (b.failed) fail("out of memory wrapping the input");
    if (ram_file_verify(b.data, b.len, "fuzz-wrapped") != RAM_OK)
        fail("a well-formed container was rejected");
    parse(b.data, b.len);
    free(b.data);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (ram_file_verify(data, size, "fuzz-input") == RAM_OK) parse(data, size);
    parse_wrapped(data, size);
    return 0;
}
