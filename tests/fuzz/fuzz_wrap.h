/* Shared by the libFuzzer targets for libram's file container: rewrap an
 * input into a container with a correct END chunk and CRC-32, so that
 * mutations of the chunk payloads get past the checksum and reach the
 * parsers behind it.  A leading file header (magic, version, kind) is
 * skipped; the rest is read as chunks (tag, reserved, length, payload) with
 * each length clamped to the bytes left; a chunk tagged END stops the walk.
 * A mutated seed file so keeps its chunk structure but gets a valid
 * checksum. */
#ifndef RAM_FUZZ_WRAP_H
#define RAM_FUZZ_WRAP_H

#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_TAG_END RAM_TAG('E', 'N', 'D', ' ')

static uint32_t fuzz_u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t fuzz_u64(const unsigned char *p) {
    return fuzz_u32(p) | (uint64_t)fuzz_u32(p + 4) << 32;
}

static void fuzz_fail(const char *target, const char *what) {
    fprintf(stderr, "%s: %s (last error: %s)\n", target, what, ram_last_error());
    abort();
}

/* The rewrapped container in a malloc'ed buffer (*len bytes); aborts when it
 * cannot be built or when ram_file_verify rejects it. */
static unsigned char *fuzz_rewrap(const uint8_t *data, size_t size, size_t *len) {
    static const unsigned char magic[8] = {0x89, 'R', 'A', 'M', '\r', '\n', 0x1a, '\n'};
    if (size >= 16 && memcmp(data, magic, 8) == 0) {
        data += 16;
        size -= 16;
    }
    ram_buf b = {0};
    ram_file_begin(&b);
    while (size >= 16) {
        uint32_t tag = fuzz_u32(data), reserved = fuzz_u32(data + 4);
        uint64_t clen = fuzz_u64(data + 8);
        data += 16;
        size -= 16;
        if (tag == FUZZ_TAG_END) break;
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
        ram_buf_u32(&b, FUZZ_TAG_END);
        ram_buf_u32(&b, 0);
        ram_buf_u64(&b, 4);
        ram_buf_u32(&b, crc);
    }
    if (b.failed) fuzz_fail("fuzz_rewrap", "out of memory wrapping the input");
    if (ram_file_verify(b.data, b.len, "fuzz-wrapped") != RAM_OK)
        fuzz_fail("fuzz_rewrap", "a well-formed container was rejected");
    *len = b.len;
    return b.data;
}

#endif
