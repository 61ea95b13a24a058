/* test_npy.c — .npy round trips for every dtype and odd shapes (zero-dim,
 * zero-size, primes), strided writes, and corrupt or truncated files. */
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "test.h"

/* A fresh temporary path (the file is created empty). */
static void tmp_path(char buf[64])
{
    strcpy(buf, "/tmp/tessel_npy_XXXXXX");
    int fd = mkstemp(buf);
    CHECK(fd >= 0);
    if (fd >= 0) close(fd);
}

static void write_bytes(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    CHECK(fwrite(p, 1, n, f) == n);
    fclose(f);
}

/* Random bytes that are valid values of the dtype (bool 0/1, floats
 * finite so that byte equality is the right comparison). */
static void fill_random(DLTensor *t, tsl_dtype dt)
{
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
    size_t es = tsl_dtype_size(dt);
    for (int64_t i = 0; i < n; i++) {
        unsigned char *p = (unsigned char *)t->data + (size_t)i * es;
        if (dt == TSL_DTYPE_BOOL) {
            *p = (unsigned char)(test_rand() & 1);
        } else if (dtype_info_of(dt)->is_float) {
            dtype_store(dt, p, test_rand_double(-1000, 1000));
        } else {
            uint64_t r = test_rand();
            memcpy(p, &r, es);
        }
    }
}

static void test_roundtrip_all_dtypes(void)
{
    static const int64_t shapes[][4] = {{0}, {1}, {7}, {3, 5}, {1, 1, 13}, {2, 3, 1, 5},
                                        {0, 3}, {4, 0, 2}};
    static const int ranks[] = {0, 1, 1, 2, 3, 4, 2, 3};
    tsl_context *ctx = tsl_context_create();
    char path[64];
    tmp_path(path);
    for (int dt = 0; dt < TSL_DTYPE_COUNT; dt++) {
        if (dt == TSL_DTYPE_BF16 || dt > TSL_DTYPE_BOOL) continue; /* written as other dtypes */
        for (size_t s = 0; s < TSL_COUNTOF(ranks); s++) {
            DLTensor *t = tsl_tensor_alloc((tsl_dtype)dt, ranks[s], shapes[s]);
            CHECK(t != NULL);
            if (!t) continue;
            fill_random(t, (tsl_dtype)dt);
            CHECK_EQ_INT(tsl_npy_write(ctx, path, t), TSL_OK);
            DLTensor *r = NULL;
            tsl_status st = tsl_npy_read(ctx, path, &r);
            CHECK_MSG(st == TSL_OK, "%s: %s", tsl_dtype_name((tsl_dtype)dt),
                      tsl_context_error(ctx));
            if (r) {
                tsl_dtype back;
                CHECK(tsl_dtype_from_dlpack(r->dtype, &back) == 0 && back == (tsl_dtype)dt);
                CHECK_EQ_INT(r->ndim, ranks[s]);
                int64_t n = 1;
                for (int d = 0; d < r->ndim; d++) {
                    CHECK_EQ_INT(r->shape[d], shapes[s][d]);
                    n *= r->shape[d];
                }
                CHECK(r->strides == NULL && r->byte_offset == 0);
                CHECK(memcmp(r->data, t->data, (size_t)n * tsl_dtype_size((tsl_dtype)dt)) == 0);
            }
            tsl_tensor_free(r);
            tsl_tensor_free(t);
        }
    }
    unlink(path);
    tsl_context_free(ctx);
}

/* The header is v1.0, padded to 64 bytes, ending in '\n', NumPy's text. */
static void test_header_format(void)
{
    tsl_context *ctx = tsl_context_create();
    char path[64];
    tmp_path(path);
    int64_t shape[2] = {3, 4};
    DLTensor *t = tsl_tensor_alloc(TSL_DTYPE_F32, 2, shape);
    fill_random(t, TSL_DTYPE_F32);
    CHECK_EQ_INT(tsl_npy_write(ctx, path, t), TSL_OK);
    size_t len = 0;
    char *bytes = file_read_all(path, &len);
    CHECK(bytes != NULL);
    if (bytes) {
        CHECK_EQ_INT(len, 128 + 48); /* 10 + 60 header bytes, padded to 128 */
        CHECK(memcmp(bytes, "\x93NUMPY\x01\x00", 8) == 0);
        CHECK_EQ_INT((unsigned char)bytes[8] | (unsigned char)bytes[9] << 8, 118);
        CHECK(bytes[127] == '\n' && bytes[126] == ' ');
        const char *want = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }";
        CHECK(memcmp(bytes + 10, want, strlen(want)) == 0);
        CHECK(memcmp(bytes + 128, t->data, 48) == 0);
    }
    free(bytes);
    /* 1-d shapes are written as Python 1-tuples */
    int64_t n1 = 5;
    DLTensor *u = tsl_tensor_alloc(TSL_DTYPE_U8, 1, &n1);
    CHECK_EQ_INT(tsl_npy_write(ctx, path, u), TSL_OK);
    bytes = file_read_all(path, &len);
    CHECK(bytes && strstr(bytes + 10, "'descr': '|u1'") && strstr(bytes + 10, "(5,)"));
    free(bytes);
    tsl_tensor_free(u);
    tsl_tensor_free(t);
    unlink(path);
    tsl_context_free(ctx);
}

/* A transposed, offset view is written in its logical C order. */
static void test_write_strided(void)
{
    tsl_context *ctx = tsl_context_create();
    char path[64];
    tmp_path(path);
    int R = (int)test_rand_int(1, 6), C = (int)test_rand_int(1, 6);
    int64_t shape[2] = {C + 1, R}; /* storage: (C+1) x R, first row skipped */
    DLTensor *st = tsl_tensor_alloc(TSL_DTYPE_F64, 2, shape);
    fill_random(st, TSL_DTYPE_F64);
    const double *s = st->data;
    int64_t vshape[2] = {R, C}, vstr[2] = {1, R};
    DLTensor view = *st;
    view.shape = vshape;
    view.strides = vstr;
    view.byte_offset = (uint64_t)R * sizeof(double);
    CHECK_EQ_INT(tsl_npy_write(ctx, path, &view), TSL_OK);
    DLTensor *r = NULL;
    CHECK_EQ_INT(tsl_npy_read(ctx, path, &r), TSL_OK);
    if (r) {
        const double *d = r->data;
        for (int i = 0; i < R; i++)
            for (int j = 0; j < C; j++) CHECK(d[i * C + j] == s[(j + 1) * R + i]);
    }
    tsl_tensor_free(r);
    tsl_tensor_free(st);
    unlink(path);
    tsl_context_free(ctx);
}

/* bfloat16 is stored as float32, exactly. */
static void test_write_bf16(void)
{
    tsl_context *ctx = tsl_context_create();
    char path[64];
    tmp_path(path);
    int64_t n = 11;
    DLTensor *t = tsl_tensor_alloc(TSL_DTYPE_BF16, 1, &n);
    fill_random(t, TSL_DTYPE_BF16);
    CHECK_EQ_INT(tsl_npy_write(ctx, path, t), TSL_OK);
    DLTensor *r = NULL;
    CHECK_EQ_INT(tsl_npy_read(ctx, path, &r), TSL_OK);
    if (r) {
        tsl_dtype back;
        CHECK(tsl_dtype_from_dlpack(r->dtype, &back) == 0 && back == TSL_DTYPE_F32);
        for (int i = 0; i < n; i++)
            CHECK(((float *)r->data)[i] ==
                  (float)dtype_load(TSL_DTYPE_BF16, (uint16_t *)t->data + i));
    }
    tsl_tensor_free(r);
    tsl_tensor_free(t);
    unlink(path);
    tsl_context_free(ctx);
}

/* Build a file: magic, version, header text (padded), then data bytes. */
static size_t make_npy(unsigned char *buf, int major, const char *hdr, size_t data_bytes)
{
    size_t pre = major == 1 ? 10 : 12, hl = strlen(hdr);
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    buf[8] = (unsigned char)(hl & 0xff);
    buf[9] = (unsigned char)(hl >> 8);
    if (major != 1) buf[10] = buf[11] = 0;
    memcpy(buf + pre, hdr, hl);
    for (size_t i = 0; i < data_bytes; i++) buf[pre + hl + i] = (unsigned char)(i * 7 + 1);
    return pre + hl + data_bytes;
}

/* Versions 2.0 and 3.0 have a 4-byte header length; double quotes and no
 * spaces are valid Python too. */
static void test_read_v2_v3(void)
{
    tsl_context *ctx = tsl_context_create();
    char path[64];
    tmp_path(path);
    unsigned char buf[512];
    for (int major = 2; major <= 3; major++) {
        size_t n = make_npy(buf, major,
                            "{\"descr\":\"<i2\",\"fortran_order\":False,\"shape\":(2,3)}\n", 12);
        write_bytes(path, buf, n);
        DLTensor *r = NULL;
        CHECK_MSG(tsl_npy_read(ctx, path, &r) == TSL_OK, "%s", tsl_context_error(ctx));
        if (r) {
            CHECK_EQ_INT(r->ndim, 2);
            CHECK_EQ_INT(r->shape[1], 3);
            CHECK(memcmp(r->data, buf + n - 12, 12) == 0);
        }
        tsl_tensor_free(r);
    }
    unlink(path);
    tsl_context_free(ctx);
}

static void expect_read_error(tsl_context *ctx, const char *path, const char *frag)
{
    DLTensor *r = (DLTensor *)1;
    tsl_status st = tsl_npy_read(ctx, path, &r);
    CHECK(st != TSL_OK);
    CHECK(r == NULL);
    CHECK_MSG(strstr(tsl_context_error(ctx), frag) != NULL, "want '%s' in '%s'", frag,
              tsl_context_error(ctx));
    CHECK_MSG(strstr(tsl_context_error(ctx), path) != NULL, "message names the file: '%s'",
              tsl_context_error(ctx));
    if (st == TSL_OK) tsl_tensor_free(r);
}

static void test_read_errors(void)
{
    static const struct { const char *hdr; size_t data; const char *frag; } cases[] = {
        {"{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", 8, "fortran_order"},
        {"{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8, "big-endian"},
        {"{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16, "unsupported dtype"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 8, "truncated data"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000,), }", 8,
         "truncated data"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, "
         "4294967296), }", 8, "truncated data"},
        {"{'descr': '<f4', 'fortran_order': False, }", 8, "missing 'shape'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 8, "'x'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", 8, "non-negative"},
        {"{'descr': '<f4' 'fortran_order': False}", 8, "expected ','"},
        {"[1, 2]", 8, "expected '{'"},
        {"{'descr': '<f4", 8, "unterminated"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", 8,
         "rank above"},
    };
    tsl_context *ctx = tsl_context_create();
    char path[64];
    tmp_path(path);
    unsigned char buf[512];
    for (size_t i = 0; i < TSL_COUNTOF(cases); i++) {
        size_t n = make_npy(buf, 1, cases[i].hdr, cases[i].data);
        write_bytes(path, buf, n);
        expect_read_error(ctx, path, cases[i].frag);
    }
    write_bytes(path, "PK\x03\x04 not npy at all", 20);
    expect_read_error(ctx, path, "bad magic");
    size_t n = make_npy(buf, 9, "{}", 0);
    write_bytes(path, buf, n);
    expect_read_error(ctx, path, "version 9");
    /* header length larger than the file */
    n = make_npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8);
    buf[9] = 0x7f;
    write_bytes(path, buf, n);
    expect_read_error(ctx, path, "truncated");
    unlink(path);
    expect_read_error(ctx, "/nonexistent/dir/x.npy", "cannot open");
    tsl_context_free(ctx);
}

/* Every prefix of a valid file is an error, never a crash. */
static void test_read_truncated_everywhere(void)
{
    tsl_context *ctx = tsl_context_create();
    char path[64];
    tmp_path(path);
    int64_t shape[2] = {2, 3};
    DLTensor *t = tsl_tensor_alloc(TSL_DTYPE_I32, 2, shape);
    fill_random(t, TSL_DTYPE_I32);
    CHECK_EQ_INT(tsl_npy_write(ctx, path, t), TSL_OK);
    size_t len = 0;
    char *bytes = file_read_all(path, &len);
    for (size_t cut = 0; bytes && cut < len; cut++) {
        write_bytes(path, bytes, cut);
        DLTensor *r = NULL;
        tsl_status st = tsl_npy_read(ctx, path, &r);
        CHECK_MSG(st == TSL_ERR_IO, "prefix %zu of %zu: status %d", cut, len, st);
        tsl_tensor_free(r);
    }
    free(bytes);
    tsl_tensor_free(t);
    unlink(path);
    tsl_context_free(ctx);
}

static void test_write_errors(void)
{
    tsl_context *ctx = tsl_context_create();
    int64_t n = 3;
    DLTensor *t = tsl_tensor_alloc(TSL_DTYPE_F32, 1, &n);
    CHECK_EQ_INT(tsl_npy_write(ctx, "/nonexistent/dir/x.npy", t), TSL_ERR_IO);
    CHECK(strstr(tsl_context_error(ctx), "/nonexistent/dir/x.npy") != NULL);
    CHECK_EQ_INT(tsl_npy_write(ctx, "/tmp/x.npy", NULL), TSL_ERR_ARG);
    DLTensor dev = *t;
    dev.device.device_type = kDLCUDA;
    CHECK_EQ_INT(tsl_npy_write(ctx, "/tmp/x.npy", &dev), TSL_ERR_ARG);
    CHECK(strstr(tsl_context_error(ctx), "host") != NULL);
    tsl_tensor_free(t);
    CHECK(tsl_tensor_alloc(TSL_DTYPE_F32, 9, NULL) == NULL);
    int64_t neg = -1;
    CHECK(tsl_tensor_alloc(TSL_DTYPE_F32, 1, &neg) == NULL);
    tsl_context_free(ctx);
}

TEST_SUITE(npy) = {
    {"roundtrip_all_dtypes", test_roundtrip_all_dtypes},
    {"header_format", test_header_format},
    {"write_strided", test_write_strided},
    {"write_bf16", test_write_bf16},
    {"read_v2_v3", test_read_v2_v3},
    {"read_errors", test_read_errors},
    {"read_truncated_everywhere", test_read_truncated_everywhere},
    {"write_errors", test_write_errors},
    {0},
};
