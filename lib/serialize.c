/* What model and checkpoint files hold: the model's architecture and
 * weights (ARCH, SENS, WGHT), and a trainer's policy, optimizer and average
 * (PLCY, OPTM, AVRG, USER), in the container of file.c.  Nothing read is
 * trusted before it is checked, and a failed load changes nothing. */
#include "internal.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG_ARCH RAM_TAG('A', 'R', 'C', 'H')
#define TAG_WGHT RAM_TAG('W', 'G', 'H', 'T')
#define TAG_CLSN RAM_TAG('C', 'L', 'S', 'N')
#define TAG_FITR RAM_TAG('F', 'I', 'T', 'R')
#define TAG_SENS RAM_TAG('S', 'E', 'N', 'S')
#define TAG_DRAM RAM_TAG('D', 'R', 'A', 'M')
#define TAG_SAMP RAM_TAG('S', 'A', 'M', 'P')
#define TAG_CTRS RAM_TAG('C', 'T', 'R', 'S')
#define TAG_ZOOM RAM_TAG('Z', 'O', 'O', 'M')
/* The convolutional layer: channels, kernel, stride as u32. */
#define TAG_CONV RAM_TAG('C', 'O', 'N', 'V')
/* The stop unit: f32 cost, u32 count (3 + glimpses), count f32 weights. */
#define TAG_STOP RAM_TAG('S', 'T', 'O', 'P')
/* The DRAM chunk: core_layers, upper_core, context, objects, emit_every as u32. */
#define DRAM_FIELDS 5

/* A model with any of DRAM's parts but the glimpse form (which ARCH
 * holds) has the DRAM chunk, and its WGHT chunk lists every tensor, so
 * that readers older than these parts refuse it (an unexpected tensor
 * count) rather than load another model; any other model's file is the
 * one it was before they existed. */
static bool has_dram_chunk(const ram_model_params *p) {
    return p->core_layers != 1 || p->context != 0 || p->objects != 1;
}
/* The tensors a file lists: every one with the convolutional layer, so
 * that readers older than it refuse the file; else as many as before it. */
static int tensors_listed(const ram_model_params *p) {
    return p->conv_channels ? RAM_T_COUNT : has_dram_chunk(p) ? RAM_T_V2_COUNT : RAM_T_V1_COUNT;
}
/* The ARCH chunk of format version 1: 14 u32 and 4 f32 fields, a u64 seed. */
#define ARCH_BYTES 80

/* ---- the model ---- */

void ram_model_serialize(const struct ram_model *m, ram_buf *b) {
    const ram_model_params *p = &m->p;
    ram_buf c = {0};
    const uint32_t ints[] = {p->channels, p->height, p->width, p->glimpse.patch, p->glimpse.depth};
    for (size_t i = 0; i < 5; i++)
        ram_buf_u32(&c, ints[i]);
    ram_buf_f32(&c, p->glimpse.scale);
    const uint32_t ints2[] = {p->form,        p->glimpse_hidden, p->loc_hidden,
                              p->glimpse_out, p->core_hidden,    p->core,
                              p->glimpses,    p->classes,        p->bound};
    for (size_t i = 0; i < 9; i++)
        ram_buf_u32(&c, ints2[i]);
    ram_buf_f32(&c, p->loc_std);
    ram_buf_f32(&c, p->loc_range_pixels);
    ram_buf_f32(&c, p->init_scale);
    ram_buf_u64(&c, p->seed);
    ram_file_chunk(b, TAG_ARCH, &c);

    c.len = 0;
    const int tensors = tensors_listed(p);
    ram_buf_u32(&c, (uint32_t)tensors);
    for (int i = 0; i < tensors; i++) {
        ram_buf_u32(&c, (uint32_t)m->t[i].rows);
        ram_buf_u32(&c, (uint32_t)m->t[i].cols);
    }
    ram_buf_floats(&c, m->w, m->n_params);
    ram_file_chunk(b, TAG_WGHT, &c);
    /* Optional chunks, only when there is something to say: a model without
     * them is the same file as before they existed. */
    if (m->names) {
        c.len = 0;
        ram_buf_u32(&c, (uint32_t)p->classes);
        for (int k = 0; k < p->classes; k++) {
            const size_t len = strlen(m->names[k]);
            ram_buf_u32(&c, (uint32_t)len);
            ram_buf_bytes(&c, m->names[k], len);
        }
        ram_file_chunk(b, TAG_CLSN, &c);
    }
    if (m->fit != RAM_FIT_PAD) {
        c.len = 0;
        ram_buf_u32(&c, (uint32_t)m->fit);
        ram_file_chunk(b, TAG_FITR, &c);
    }
    if (p->sensor != RAM_SENSOR_HARD) {
        c.len = 0;
        ram_buf_u32(&c, (uint32_t)p->sensor);
        ram_file_chunk(b, TAG_SENS, &c);
    }
    if (has_dram_chunk(p)) {
        c.len = 0;
        const uint32_t dram[DRAM_FIELDS] = {(uint32_t)p->core_layers, (uint32_t)p->upper_core,
                                            (uint32_t)p->context, (uint32_t)p->objects,
                                            (uint32_t)p->emit_every};
        for (int i = 0; i < DRAM_FIELDS; i++)
            ram_buf_u32(&c, dram[i]);
        ram_file_chunk(b, TAG_DRAM, &c);
    }
    if (p->cell_samples) {
        c.len = 0;
        ram_buf_u32(&c, (uint32_t)p->cell_samples);
        ram_file_chunk(b, TAG_SAMP, &c);
    }
    if (p->contrast) {
        c.len = 0;
        ram_buf_u32(&c, (uint32_t)p->contrast);
        ram_file_chunk(b, TAG_CTRS, &c);
    }
    if (p->zoom_max > 0.0f) {
        c.len = 0;
        ram_buf_f32(&c, p->zoom_min);
        ram_buf_f32(&c, p->zoom_max);
        ram_file_chunk(b, TAG_ZOOM, &c);
    }
    if (p->conv_channels) {
        c.len = 0;
        ram_buf_u32(&c, (uint32_t)p->conv_channels);
        ram_buf_u32(&c, (uint32_t)p->conv_kernel);
        ram_buf_u32(&c, (uint32_t)p->conv_stride);
        ram_file_chunk(b, TAG_CONV, &c);
    }
    if (m->has_stop) {
        const int d = RAM_STOP_WEIGHTS(p->glimpses);
        c.len = 0;
        ram_buf_f32(&c, m->stop_cost);
        ram_buf_u32(&c, (uint32_t)d);
        ram_buf_floats(&c, m->stop_w, (size_t)d);
        ram_file_chunk(b, TAG_STOP, &c);
    }
    if (c.failed) b->failed = true;
    free(c.data);
}

/* The optional STOP chunk (the stop unit) into m. */
static ram_status read_stop(const unsigned char *data, size_t len, struct ram_model *m) {
    ram_reader r;
    if (!ram_file_find(data, len, TAG_STOP, &r)) return RAM_OK;
    const int d = RAM_STOP_WEIGHTS(m->p.glimpses);
    const float cost = ram_rd_f32(&r);
    const uint32_t count = ram_rd_u32(&r);
    float w[RAM_STOP_WEIGHTS(64)];
    if (r.bad || count != (uint32_t)d || !ram_rd_floats(&r, w, (size_t)d) || r.pos != r.len)
        return ram_fail(RAM_ERR_FORMAT,
                        "model file: STOP chunk of %zu bytes, %u weights (%d glimpses: %d)", r.len,
                        count, m->p.glimpses, d);
    if (ram_model_set_stop_unit(m, w, cost)) {
        char why[512];
        snprintf(why, sizeof why, "%s", ram_last_error());
        return ram_fail(RAM_ERR_FORMAT, "model file: bad stop unit: %s", why);
    }
    return RAM_OK;
}

/* The optional CLSN (class names), FITR (fit rule) and STOP chunks into m. */
static ram_status read_extras(const unsigned char *data, size_t len, struct ram_model *m) {
    ram_reader r;
    ram_status st = read_stop(data, len, m);
    if (st) return st;
    if (ram_file_find(data, len, TAG_FITR, &r)) {
        const uint32_t fit = ram_rd_u32(&r);
        if (r.bad || r.pos != r.len || fit > RAM_FIT_CROP)
            return ram_fail(RAM_ERR_FORMAT, "model file: FITR chunk of %zu bytes, rule %u", r.len,
                            fit);
        m->fit = (ram_fit)fit;
    }
    if (!ram_file_find(data, len, TAG_CLSN, &r)) return RAM_OK;
    const uint32_t count = ram_rd_u32(&r);
    if (r.bad || count != (uint32_t)m->p.classes)
        return ram_fail(RAM_ERR_FORMAT, "model file: CLSN chunk names %u classes, the model has %d",
                        count, m->p.classes);
    const char **names = malloc(sizeof *names * count);
    size_t *lens = malloc(sizeof *lens * count);
    ram_status s = RAM_OK;
    if (!names || !lens) s = ram_fail(RAM_ERR_OUT_OF_MEMORY, "model file: out of memory");
    for (uint32_t k = 0; !s && k < count; k++) {
        lens[k] = ram_rd_u32(&r);
        if (r.bad || lens[k] > r.len - r.pos) {
            s = ram_fail(RAM_ERR_FORMAT, "model file: class name %u runs past its chunk", k);
            break;
        }
        names[k] = (const char *)r.p + r.pos;
        r.pos += lens[k];
    }
    if (!s && r.pos != r.len)
        s = ram_fail(RAM_ERR_FORMAT, "model file: %zu bytes after the class names", r.len - r.pos);
    if (!s) {
        s = ram_model_put_names(m, names, lens, (int)count, "model file");
        if (s == RAM_ERR_INVALID_ARGUMENT) s = RAM_ERR_FORMAT; /* a bad name is a bad file */
    }
    free(names);
    free(lens);
    return s;
}

ram_status ram_model_deserialize(const unsigned char *data, size_t len, struct ram_model **out) {
    ram_reader a, w;
    if (!ram_file_find(data, len, TAG_ARCH, &a))
        return ram_fail(RAM_ERR_FORMAT, "model file: no ARCH chunk (architecture)");
    if (a.len < ARCH_BYTES)
        return ram_fail(RAM_ERR_FORMAT, "model file: the ARCH chunk is %zu bytes, %d expected",
                        a.len, ARCH_BYTES);
    ram_model_params p;
    ram_model_params_init(&p);
    /* Enums and sizes are read as unsigned and range-checked by validate. */
    p.channels = (int)ram_rd_u32(&a);
    p.height = (int)ram_rd_u32(&a);
    p.width = (int)ram_rd_u32(&a);
    p.glimpse.patch = (int)ram_rd_u32(&a);
    p.glimpse.depth = (int)ram_rd_u32(&a);
    p.glimpse.scale = ram_rd_f32(&a);
    p.form = (ram_glimpse_form)ram_rd_u32(&a);
    p.glimpse_hidden = (int)ram_rd_u32(&a);
    p.loc_hidden = (int)ram_rd_u32(&a);
    p.glimpse_out = (int)ram_rd_u32(&a);
    p.core_hidden = (int)ram_rd_u32(&a);
    p.core = (ram_core_type)ram_rd_u32(&a);
    p.glimpses = (int)ram_rd_u32(&a);
    p.classes = (int)ram_rd_u32(&a);
    p.bound = (ram_loc_bound)ram_rd_u32(&a);
    p.loc_std = ram_rd_f32(&a);
    p.loc_range_pixels = ram_rd_f32(&a);
    p.init_scale = ram_rd_f32(&a);
    p.seed = ram_rd_u64(&a);
    /* The sensor is part of the architecture, in a chunk of its own so
     * that a hard model's file is the one it was before sensors had a
     * choice; a file without it is HARD. */
    ram_reader sens;
    if (ram_file_find(data, len, TAG_SENS, &sens)) {
        const uint32_t sensor = ram_rd_u32(&sens);
        if (sens.bad || sens.pos != sens.len || sensor > RAM_SENSOR_SOFT)
            return ram_fail(RAM_ERR_FORMAT, "model file: SENS chunk of %zu bytes, sensor %u",
                            sens.len, sensor);
        p.sensor = (ram_sensor)sensor;
    }
    ram_reader dram;
    if (ram_file_find(data, len, TAG_DRAM, &dram)) {
        uint32_t v[DRAM_FIELDS];
        for (int i = 0; i < DRAM_FIELDS; i++)
            v[i] = ram_rd_u32(&dram);
        /* Sizes as unsigned: validate refuses what does not fit an int. */
        if (dram.bad || dram.pos != dram.len || v[0] > 2 || v[1] > RAM_CORE_LSTM || v[2] > 256 ||
            v[3] > 64 || v[4] > 64 || v[4] == 0)
            return ram_fail(RAM_ERR_FORMAT,
                            "model file: DRAM chunk of %zu bytes, values %u %u %u %u %u", dram.len,
                            v[0], v[1], v[2], v[3], v[4]);
        p.core_layers = (int)v[0];
        p.upper_core = (ram_core_type)v[1];
        p.context = (int)v[2];
        p.objects = (int)v[3];
        p.emit_every = (int)v[4];
        if (!has_dram_chunk(&p))
            return ram_fail(RAM_ERR_FORMAT, "model file: a DRAM chunk that changes nothing");
    }
    ram_model_resolve_emit(&p); /* a file without the chunk: one label after the last glimpse */
    ram_reader samp;            /* a file without it reads every pixel of a cell */
    if (ram_file_find(data, len, TAG_SAMP, &samp)) {
        const uint32_t k = ram_rd_u32(&samp);
        if (samp.bad || samp.pos != samp.len || k == 0 || k > 64)
            return ram_fail(RAM_ERR_FORMAT, "model file: SAMP chunk of %zu bytes, %u samples",
                            samp.len, k);
        p.cell_samples = (int)k;
    }
    ram_reader ctrs; /* a file without it reads pixel values */
    if (ram_file_find(data, len, TAG_CTRS, &ctrs)) {
        const uint32_t on = ram_rd_u32(&ctrs);
        if (ctrs.bad || ctrs.pos != ctrs.len || on != 1)
            return ram_fail(RAM_ERR_FORMAT, "model file: CTRS chunk of %zu bytes, value %u",
                            ctrs.len, on);
        p.contrast = 1;
    }
    ram_reader zoom; /* a file without it has no zoom */
    if (ram_file_find(data, len, TAG_ZOOM, &zoom)) {
        const float lo = ram_rd_f32(&zoom), hi = ram_rd_f32(&zoom);
        /* (0, 0) would mean no zoom: a chunk that says so is not written */
        if (zoom.bad || zoom.pos != zoom.len || !(hi > 0.0f))
            return ram_fail(RAM_ERR_FORMAT, "model file: ZOOM chunk of %zu bytes, range [%g, %g]",
                            zoom.len, (double)lo, (double)hi);
        p.zoom_min = lo;
        p.zoom_max = hi;
    }
    ram_reader conv; /* a file without it has no convolutional layer */
    if (ram_file_find(data, len, TAG_CONV, &conv)) {
        uint32_t v[3];
        for (int i = 0; i < 3; i++)
            v[i] = ram_rd_u32(&conv);
        /* Sizes as unsigned: validate refuses what does not fit the patch. */
        if (conv.bad || conv.pos != conv.len || v[0] == 0 || v[0] > 4096 || v[1] == 0 ||
            v[1] > RAM_MAX_PATCH || v[2] == 0 || v[2] > RAM_MAX_PATCH)
            return ram_fail(RAM_ERR_FORMAT, "model file: CONV chunk of %zu bytes, values %u %u %u",
                            conv.len, v[0], v[1], v[2]);
        p.conv_channels = (int)v[0];
        p.conv_kernel = (int)v[1];
        p.conv_stride = (int)v[2];
    }
    ram_status s = ram_model_validate(&p);
    if (s) {
        char why[512]; /* ram_last_error() is the buffer ram_fail writes to */
        snprintf(why, sizeof why, "%s", ram_last_error());
        return ram_fail(RAM_ERR_FORMAT, "model file: bad architecture: %s", why);
    }
    if (!ram_file_find(data, len, TAG_WGHT, &w))
        return ram_fail(RAM_ERR_FORMAT, "model file: no WGHT chunk (weights)");
    struct ram_model layout;
    ram_model_layout(&layout, &p);
    /* Check the tensor table against the architecture before allocating. */
    const int tensors = tensors_listed(&p);
    if (ram_rd_u32(&w) != (uint32_t)tensors)
        return ram_fail(RAM_ERR_FORMAT, "model file: unexpected tensor count");
    for (int i = 0; i < tensors; i++) {
        uint32_t rows = ram_rd_u32(&w), cols = ram_rd_u32(&w);
        if (w.bad || rows != (uint32_t)layout.t[i].rows || cols != (uint32_t)layout.t[i].cols)
            return ram_fail(RAM_ERR_FORMAT,
                            "model file: tensor %d is %u x %u, the architecture says %d x %d", i,
                            rows, cols, layout.t[i].rows, layout.t[i].cols);
    }
    if ((w.len - w.pos) / 4 != layout.n_params || (w.len - w.pos) % 4)
        return ram_fail(RAM_ERR_FORMAT, "model file: %zu weight bytes, %zu parameters expected",
                        w.len - w.pos, layout.n_params);
    struct ram_model *m;
    if ((s = ram_model_alloc(&p, &m))) return s;
    ram_rd_floats(&w, m->w, m->n_params);
    for (size_t i = 0; i < m->n_params; i++)
        if (!isfinite(m->w[i])) {
            ram_model_free(m);
            return ram_fail(RAM_ERR_FORMAT, "model file: weight %zu is not finite", i);
        }
    if ((s = read_extras(data, len, m))) {
        ram_model_free(m);
        return s;
    }
    *out = m;
    return RAM_OK;
}

ram_status ram_model_save(const ram_model *m, const char *path) {
    if (!m || !path) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "model_save: NULL argument");
    ram_buf b = {0};
    ram_file_begin(&b);
    ram_model_serialize(m, &b);
    return ram_file_finish_and_write(&b, path);
}

ram_status ram_model_load(const char *path, ram_model **out) {
    if (!path || !out) return ram_fail(RAM_ERR_INVALID_ARGUMENT, "model_load: NULL argument");
    unsigned char *data;
    size_t len;
    ram_status s = ram_file_read(path, &data, &len);
    if (s) return s;
    s = ram_model_deserialize(data, len, out);
    free(data);
    return s;
}

ram_status ram_model_load_memory(const void *data, size_t size, ram_model **out) {
    if ((!data && size) || !out)
        return ram_fail(RAM_ERR_INVALID_ARGUMENT, "model_load_memory: NULL argument");
    /* The same checks ram_file_read makes after reading a file. */
    ram_status s = ram_file_verify(data, size, "model (in memory)");
    if (s) return s;
    return ram_model_deserialize(data, size, out);
}

/* ---- checkpoints ---- */

static void put_rng(ram_buf *b, const ram_rng *r) {
    for (int i = 0; i < 4; i++)
        ram_buf_u64(b, r->s[i]);
    uint64_t bits;
    memcpy(&bits, &r->spare, 8);
    ram_buf_u64(b, bits);
    ram_buf_u32(b, (uint32_t)r->has_spare);
}

/* False for a state no generator can be in: xoshiro's all-zero state only
 * ever yields zeros (and ram_rng_normal would then loop for ever), and a
 * non-finite spare normal would become a NaN location. */
static bool get_rng(ram_reader *rd, ram_rng *r) {
    uint64_t any = 0;
    for (int i = 0; i < 4; i++)
        any |= r->s[i] = ram_rd_u64(rd);
    uint64_t bits = ram_rd_u64(rd);
    memcpy(&r->spare, &bits, 8);
    r->has_spare = ram_rd_u32(rd) != 0;
    return any != 0 && isfinite(r->spare);
}

static bool all_finite(const float *v, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i])) return false;
    return true;
}

ram_status ram_checkpoint_save(const ram_checkpoint *t, const char *path, const void *user,
                               size_t user_len) {
    const ram_policy *pol = t->pol;
    const size_t nopt = t->m->n_params + pol->n_bw;
    ram_buf file = {0}, c = {0};
    ram_file_begin(&file);
    ram_model_serialize(t->m, &file);

    ram_buf_u32(&c, (uint32_t)pol->p.baseline);
    ram_buf_u64(&c, pol->n_bw);
    ram_buf_floats(&c, pol->bw, pol->n_bw);
    put_rng(&c, &pol->rng);
    ram_file_chunk(&file, RAM_TAG('P', 'L', 'C', 'Y'), &c);

    c.len = 0;
    ram_buf_u32(&c, (uint32_t)t->opt->p.optimizer);
    ram_buf_u64(&c, (uint64_t)t->opt->step);
    put_rng(&c, t->shuffle);
    ram_buf_u64(&c, nopt);
    ram_buf_floats(&c, t->opt->m1, nopt);
    ram_buf_floats(&c, t->opt->m2, nopt);
    ram_file_chunk(&file, RAM_TAG('O', 'P', 'T', 'M'), &c);

    if (t->opt->avg) {
        c.len = 0;
        ram_buf_u64(&c, t->m->n_params);
        ram_buf_floats(&c, t->opt->avg, t->m->n_params);
        ram_file_chunk(&file, RAM_TAG('A', 'V', 'R', 'G'), &c);
    }

    c.len = 0;
    ram_buf_bytes(&c, user, user_len);
    ram_file_chunk(&file, RAM_TAG('U', 'S', 'E', 'R'), &c);
    free(c.data);
    return ram_file_finish_and_write(&file, path);
}

/* A checkpoint's state, parsed and checked, before it is committed. */
typedef struct parsed {
    struct ram_model *m;
    float *m1, *m2, *bw, *avg;
    ram_rng prng, trng;
    uint64_t step;
    ram_reader user;
} parsed;

static void parsed_free(parsed *q) {
    ram_model_free(q->m);
    free(q->bw);
    free(q->m1);
    free(q->m2);
    free(q->avg);
}

/* PLCY (baseline weights, sampling generator) and OPTM (step, shuffling
 * generator, moments), checked against the trainer. */
static ram_status parse_policy_optim(const ram_checkpoint *t, ram_reader *pc, ram_reader *oc,
                                     parsed *q, const char *name) {
    const ram_policy *pol = t->pol;
    const size_t nopt = t->m->n_params + pol->n_bw;
    uint32_t btype = ram_rd_u32(pc);
    uint64_t nbw = ram_rd_u64(pc);
    if (pc->bad || btype != (uint32_t)pol->p.baseline || nbw != pol->n_bw)
        return ram_fail(RAM_ERR_MISMATCH, "%s: the checkpoint's baseline differs from the policy's",
                        name);
    q->bw = malloc(sizeof(float) * (nbw + 1));
    q->m1 = malloc(sizeof(float) * nopt);
    q->m2 = malloc(sizeof(float) * nopt);
    if (!q->bw || !q->m1 || !q->m2)
        return ram_fail(RAM_ERR_OUT_OF_MEMORY, "load_checkpoint: out of memory");
    ram_rd_floats(pc, q->bw, nbw);
    bool rng_ok = get_rng(pc, &q->prng);
    uint32_t opt = ram_rd_u32(oc);
    q->step = ram_rd_u64(oc);
    rng_ok &= get_rng(oc, &q->trng);
    uint64_t n = ram_rd_u64(oc);
    if (pc->bad || oc->bad || q->step > (uint64_t)LONG_MAX) /* no trainer takes that many steps */
        return ram_fail(RAM_ERR_FORMAT, "%s: the checkpoint's policy or optimizer state is damaged",
                        name);
    if (n != nopt || opt != (uint32_t)t->opt->p.optimizer)
        return ram_fail(RAM_ERR_MISMATCH,
                        "%s: the checkpoint's policy or optimizer state does not fit this trainer",
                        name);
    if (!ram_rd_floats(oc, q->m1, nopt) || !ram_rd_floats(oc, q->m2, nopt))
        return ram_fail(RAM_ERR_FORMAT, "%s: optimizer state is short", name);
    /* What ram_model_deserialize checks for the weights, for the rest of the
     * state: a NaN here would only surface steps later as a diverged run. */
    bool m2_ok = true;
    for (size_t i = 0; i < nopt; i++)
        m2_ok &= q->m2[i] >= 0; /* Adam's second moment; SGD keeps zeros; false for NaN */
    if (!rng_ok || !all_finite(q->bw, nbw) || !all_finite(q->m1, nopt) || !m2_ok ||
        !all_finite(q->m2, nopt))
        return ram_fail(RAM_ERR_FORMAT,
                        "%s: impossible random-number state, or non-finite baseline or optimizer "
                        "values",
                        name);
    return RAM_OK;
}

/* AVRG, when the trainer keeps an average: the file's, or one that starts
 * from its weights. */
static ram_status parse_average(const ram_checkpoint *t, const unsigned char *data, size_t len,
                                parsed *q, const char *name) {
    if (!t->opt->avg) return RAM_OK;
    const size_t np = q->m->n_params;
    ram_reader ac;
    if (!(q->avg = malloc(sizeof(float) * np)))
        return ram_fail(RAM_ERR_OUT_OF_MEMORY, "load_checkpoint: out of memory");
    if (!ram_file_find(data, len, RAM_TAG('A', 'V', 'R', 'G'), &ac)) {
        memcpy(q->avg, q->m->w, sizeof(float) * np);
        return RAM_OK;
    }
    const uint64_t na = ram_rd_u64(&ac);
    if (ac.bad || na != np || !ram_rd_floats(&ac, q->avg, np) || !all_finite(q->avg, np))
        return ram_fail(RAM_ERR_FORMAT,
                        "%s: the weights' average is short, of the wrong size or not finite", name);
    return RAM_OK;
}

/* Everything checked: into the trainer. */
static void commit(const ram_checkpoint *t, const parsed *q, void *user, size_t user_cap,
                   size_t *user_len) {
    ram_policy *pol = t->pol;
    const size_t np = q->m->n_params, nopt = t->m->n_params + pol->n_bw;
    memcpy(t->m->w, q->m->w, sizeof(float) * np);
    ram_model_touch(t->m);
    if (q->avg) memcpy(t->opt->avg, q->avg, sizeof(float) * np);
    if (pol->n_bw) memcpy(pol->bw, q->bw, sizeof(float) * pol->n_bw);
    pol->rng = q->prng;
    *t->shuffle = q->trng;
    t->opt->step = (long)q->step;
    memcpy(t->opt->m1, q->m1, sizeof(float) * nopt);
    memcpy(t->opt->m2, q->m2, sizeof(float) * nopt);
    if (user_len) *user_len = q->user.len;
    if (user) memcpy(user, q->user.p, q->user.len < user_cap ? q->user.len : user_cap);
}

ram_status ram_checkpoint_load(const ram_checkpoint *t, const unsigned char *data, size_t len,
                               const char *name, void *user, size_t user_cap, size_t *user_len) {
    parsed q = {0};
    ram_reader pc, oc;
    ram_status s = ram_model_deserialize(data, len, &q.m);
    if (s) goto done;
    if (!ram_file_find(data, len, RAM_TAG('P', 'L', 'C', 'Y'), &pc) ||
        !ram_file_find(data, len, RAM_TAG('O', 'P', 'T', 'M'), &oc) ||
        !ram_file_find(data, len, RAM_TAG('U', 'S', 'E', 'R'), &q.user)) {
        s = ram_fail(RAM_ERR_FORMAT, "%s: a model file, not a checkpoint", name);
        goto done;
    }
    if (!ram_model_same_arch(&q.m->p, &t->m->p) || q.m->n_params != t->m->n_params) {
        s = ram_fail(RAM_ERR_MISMATCH,
                     "%s: the checkpoint's architecture differs from the trainer's", name);
        goto done;
    }
    if ((s = parse_policy_optim(t, &pc, &oc, &q, name))) goto done;
    if ((s = parse_average(t, data, len, &q, name))) goto done;
    commit(t, &q, user, user_cap, user_len);
done:
    parsed_free(&q);
    return s;
}
