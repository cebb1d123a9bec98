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
#include "fuzz_wrap.h"

#define ARCH_SIZE 80 /* the fields version 1 defines; longer payloads are allowed */

static void fail(const char *what) {
    fuzz_fail("fuzz_model_file", what);
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
    ram_buf_u32(&b, FUZZ_TAG_END); /* ram_file_find stops at END */
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
    size_t len;
    unsigned char *file = fuzz_rewrap(data, size, &len);
    parse(file, len);
    free(file);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (ram_file_verify(data, size, "fuzz-input") == RAM_OK) parse(data, size);
    parse_wrapped(data, size);
    return 0;
}
