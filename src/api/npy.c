/* npy.c — NumPy .npy files: read versions 1.0, 2.0 and 3.0 (C order,
 * little-endian), write version 1.0.
 *
 * Format: "\x93NUMPY", major, minor, header length (2 bytes little-endian
 * in 1.0, 4 bytes in 2.0/3.0), then a Python dict literal
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
 * padded with spaces and ended by '\n' so that the data starts at a
 * multiple of 64 bytes, then the elements in C order.
 *
 * bfloat16 has no NumPy dtype: writing a bfloat16 tensor stores it as
 * '<f4' (every bfloat16 value is exactly representable in float32), so it
 * reads back as float32. Reading never allocates more than the file can
 * hold: the data size implied by the header is checked against the file
 * size first. Writing is atomic: the file is written beside its path
 * under a temporary name and renamed over it, so a full disk or a crash
 * leaves the old file whole (or none), never a truncated one. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api.h"

/* Largest header accepted when reading (NumPy itself caps at ~10 KB). */
#define NPY_MAX_HEADER (1u << 20)

/*        dtype           descr */
static const struct { tsl_dtype t; const char *descr; } npy_descrs[] = {
    {TSL_DTYPE_F16, "f2"}, {TSL_DTYPE_F32, "f4"}, {TSL_DTYPE_F64, "f8"},
    {TSL_DTYPE_I8, "i1"},  {TSL_DTYPE_I16, "i2"}, {TSL_DTYPE_I32, "i4"},
    {TSL_DTYPE_I64, "i8"}, {TSL_DTYPE_U8, "u1"},  {TSL_DTYPE_U16, "u2"},
    {TSL_DTYPE_U32, "u4"}, {TSL_DTYPE_U64, "u8"}, {TSL_DTYPE_BOOL, "b1"},
};

/* ---- header dict parser ------------------------------------------------ */

typedef struct npy_parser {
    const char *p, *end;
    const char *path;
    tsl_context *ctx;
} npy_parser;

static void npy_skip_ws(npy_parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' ||
                               *ps->p == '\r'))
        ps->p++;
}

static int npy_accept(npy_parser *ps, char c)
{
    npy_skip_ws(ps);
    if (ps->p < ps->end && *ps->p == c) {
        ps->p++;
        return 1;
    }
    return 0;
}

static tsl_status npy_corrupt(npy_parser *ps, const char *what)
{
    return api_error(ps->ctx, TSL_ERR_IO, "'%s': corrupt .npy header: %s", ps->path, what);
}

/* string -> "'" chars "'" | '"' chars '"' */
static tsl_status npy_parse_string(npy_parser *ps, char *out, size_t cap)
{
    npy_skip_ws(ps);
    if (ps->p >= ps->end || (*ps->p != '\'' && *ps->p != '"'))
        return npy_corrupt(ps, "expected a quoted string");
    char q = *ps->p++;
    size_t n = 0;
    while (ps->p < ps->end && *ps->p != q) {
        if (n + 1 >= cap) return npy_corrupt(ps, "string too long");
        out[n++] = *ps->p++;
    }
    if (ps->p >= ps->end) return npy_corrupt(ps, "unterminated string");
    ps->p++;
    out[n] = 0;
    return TSL_OK;
}

/* bool -> "True" | "False" */
static tsl_status npy_parse_bool(npy_parser *ps, int *out)
{
    npy_skip_ws(ps);
    size_t left = (size_t)(ps->end - ps->p);
    if (left >= 4 && !memcmp(ps->p, "True", 4)) {
        ps->p += 4;
        *out = 1;
        return TSL_OK;
    }
    if (left >= 5 && !memcmp(ps->p, "False", 5)) {
        ps->p += 5;
        *out = 0;
        return TSL_OK;
    }
    return npy_corrupt(ps, "expected True or False");
}

/* shape -> "(" [ int { "," int } [ "," ] ] ")" */
static tsl_status npy_parse_shape(npy_parser *ps, int *rank, int64_t shape[TSL_MAX_RANK])
{
    if (!npy_accept(ps, '(')) return npy_corrupt(ps, "expected '(' for the shape");
    *rank = 0;
    for (;;) {
        if (npy_accept(ps, ')')) return TSL_OK;
        npy_skip_ws(ps);
        if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
            return npy_corrupt(ps, "expected a non-negative integer in the shape");
        int64_t v = 0;
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
            int digit = *ps->p++ - '0';
            if (v > (INT64_MAX - digit) / 10) return npy_corrupt(ps, "shape dim too large");
            v = v * 10 + digit;
        }
        if (ps->p < ps->end && *ps->p == 'L') ps->p++; /* Python 2 longs */
        if (*rank == TSL_MAX_RANK)
            return api_error(ps->ctx, TSL_ERR_IO, "'%s': rank above %d is not supported",
                             ps->path, TSL_MAX_RANK);
        shape[(*rank)++] = v;
        if (npy_accept(ps, ')')) return TSL_OK;
        if (!npy_accept(ps, ',')) return npy_corrupt(ps, "expected ',' or ')' in the shape");
    }
}

/* Map a descr to a dtype: byte order '<', '|' or '=' (this library only
 * runs on little-endian hosts), then one of npy_descrs. */
static tsl_status npy_descr_dtype(npy_parser *ps, const char *descr, tsl_dtype *out)
{
    char order = descr[0];
    const char *code = descr + 1;
    if (order != '<' && order != '|' && order != '=' && order != '>') {
        order = '=';
        code = descr;
    }
    for (size_t i = 0; i < TSL_COUNTOF(npy_descrs); i++) {
        if (strcmp(code, npy_descrs[i].descr) != 0) continue;
        if (order == '>' && tsl_dtype_size(npy_descrs[i].t) > 1)
            return api_error(ps->ctx, TSL_ERR_IO,
                             "'%s': big-endian data (descr '%s') is not supported; "
                             "convert with .astype('<%s')",
                             ps->path, descr, code);
        *out = npy_descrs[i].t;
        return TSL_OK;
    }
    return api_error(ps->ctx, TSL_ERR_IO,
                     "'%s': unsupported dtype descr '%s' (supported: float16/32/64, "
                     "int8..64, uint8..64, bool)",
                     ps->path, descr);
}

/* header -> "{" { key ":" value "," } "}"  with keys descr, fortran_order,
 * shape, each exactly once. */
static tsl_status npy_parse_header(npy_parser *ps, tsl_dtype *dtype, int *rank,
                                   int64_t shape[TSL_MAX_RANK])
{
    int have_descr = 0, have_fortran = 0, have_shape = 0, fortran = 0;
    char descr[32];
    tsl_status st;
    if (!npy_accept(ps, '{')) return npy_corrupt(ps, "expected '{'");
    while (!npy_accept(ps, '}')) {
        char key[32];
        if ((st = npy_parse_string(ps, key, sizeof key))) return st;
        if (!npy_accept(ps, ':')) return npy_corrupt(ps, "expected ':' after a key");
        if (!strcmp(key, "descr") && !have_descr) {
            if ((st = npy_parse_string(ps, descr, sizeof descr))) return st;
            have_descr = 1;
        } else if (!strcmp(key, "fortran_order") && !have_fortran) {
            if ((st = npy_parse_bool(ps, &fortran))) return st;
            have_fortran = 1;
        } else if (!strcmp(key, "shape") && !have_shape) {
            if ((st = npy_parse_shape(ps, rank, shape))) return st;
            have_shape = 1;
        } else {
            return api_error(ps->ctx, TSL_ERR_IO,
                             "'%s': corrupt .npy header: unexpected or repeated key '%s'",
                             ps->path, key);
        }
        if (!npy_accept(ps, ',')) {
            if (npy_accept(ps, '}')) break;
            return npy_corrupt(ps, "expected ',' or '}'");
        }
    }
    if (!have_descr || !have_fortran || !have_shape)
        return npy_corrupt(ps, !have_descr     ? "missing 'descr'"
                               : !have_shape   ? "missing 'shape'"
                                               : "missing 'fortran_order'");
    if (fortran)
        return api_error(ps->ctx, TSL_ERR_IO,
                         "'%s': fortran_order True is not supported; save a C-order "
                         "array (np.ascontiguousarray)",
                         ps->path);
    return npy_descr_dtype(ps, descr, dtype);
}

/* ---- reading ----------------------------------------------------------- */

static tsl_status npy_read_file(tsl_context *ctx, const char *path, FILE *f,
                                DLTensor **out)
{
    struct stat stbuf;
    if (fstat(fileno(f), &stbuf) != 0)
        return api_error(ctx, TSL_ERR_IO, "cannot stat '%s': %s", path, strerror(errno));
    /* the file's size bounds what the header may claim (nothing is
     * allocated on a header's word), so it must be a file that has one */
    if (!S_ISREG(stbuf.st_mode))
        return api_error(ctx, TSL_ERR_IO,
                         "'%s' is not a regular file (a pipe, socket or device): a .npy is read from a file; "
                         "save it to one first",
                         path);
    uint64_t fsize = (uint64_t)stbuf.st_size;
    unsigned char pre[12];
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0)
        return api_error(ctx, TSL_ERR_IO, "'%s' is not a .npy file (bad magic)", path);
    int major = pre[6];
    uint64_t hlen, hstart;
    if (major == 1) {
        hlen = (uint64_t)pre[8] | (uint64_t)pre[9] << 8;
        hstart = 10;
    } else if (major == 2 || major == 3) {
        if (fread(pre + 10, 1, 2, f) != 2)
            return api_error(ctx, TSL_ERR_IO, "'%s': truncated .npy header", path);
        hlen = (uint64_t)pre[8] | (uint64_t)pre[9] << 8 | (uint64_t)pre[10] << 16 |
               (uint64_t)pre[11] << 24;
        hstart = 12;
    } else {
        return api_error(ctx, TSL_ERR_IO, "'%s': unsupported .npy version %d.%d", path, major,
                         pre[7]);
    }
    if (hlen > NPY_MAX_HEADER || hstart + hlen > fsize)
        return api_error(ctx, TSL_ERR_IO,
                         "'%s': truncated .npy header (%llu header bytes, file has %llu)",
                         path, (unsigned long long)hlen, (unsigned long long)fsize);
    char *hdr = malloc(hlen + 1);
    if (!hdr) return api_error(ctx, TSL_ERR_NOMEM, "out of memory reading '%s'", path);
    if (fread(hdr, 1, hlen, f) != hlen) {
        free(hdr);
        return api_error(ctx, TSL_ERR_IO, "'%s': truncated .npy header", path);
    }
    hdr[hlen] = 0;
    npy_parser ps = {hdr, hdr + hlen, path, ctx};
    tsl_dtype dtype = TSL_DTYPE_F32;
    int rank = 0;
    int64_t shape[TSL_MAX_RANK] = {0};
    tsl_status st = npy_parse_header(&ps, &dtype, &rank, shape);
    free(hdr);
    if (st) return st;

    int64_t n = api_shape_numel(rank, shape);
    size_t esize = tsl_dtype_size(dtype);
    uint64_t avail = fsize - hstart - hlen;
    if (n < 0 || (uint64_t)n > avail / esize)
        return api_error(ctx, TSL_ERR_IO,
                         "'%s': truncated data: the header's shape needs more bytes than the "
                         "%llu the file holds",
                         path, (unsigned long long)avail);
    DLTensor *t = tsl_tensor_alloc(dtype, rank, shape);
    if (!t)
        return api_error(ctx, TSL_ERR_NOMEM, "out of memory: %llu bytes for '%s'",
                         (unsigned long long)((uint64_t)n * esize), path);
    size_t bytes = (size_t)n * esize;
    if (fread(t->data, 1, bytes, f) != bytes) {
        tsl_tensor_free(t);
        return api_error(ctx, TSL_ERR_IO, "'%s': read error in the data", path);
    }
    if (dtype == TSL_DTYPE_BOOL) {
        unsigned char *b = t->data;
        for (size_t i = 0; i < bytes; i++) b[i] = b[i] != 0;
    }
    *out = t;
    return TSL_OK;
}

tsl_status tsl_npy_read(TSL_KEEP tsl_context *ctx, TSL_KEEP const char *path,
                        TSL_GIVE DLTensor **out)
{
    if (!out) return api_error(ctx, TSL_ERR_ARG, "tsl_npy_read: out is NULL");
    *out = NULL;
    if (!path) return api_error(ctx, TSL_ERR_ARG, "tsl_npy_read: path is NULL");
    /* O_NONBLOCK: opening a FIFO no one writes to must not wait forever
     * (npy_read_file then refuses anything but a regular file) */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    FILE *f = NULL;
    if (fd >= 0) {
        int fl = fcntl(fd, F_GETFL);
        if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
        f = fdopen(fd, "rb");
        if (!f) close(fd);
    }
    if (!f) return api_error(ctx, TSL_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    tsl_status st = npy_read_file(ctx, path, f, out);
    fclose(f);
    return st;
}

/* ---- writing ----------------------------------------------------------- */

/* The dtype a tensor is written as: NumPy has no bfloat16 and no low-bit
 * types, so bfloat16 and the low-bit floats go as float32, the low-bit
 * integers as int8/uint8 (their logical values: docs/lowbit.md). */
static tsl_dtype npy_file_dtype(tsl_dtype t)
{
    const dtype_info *d = dtype_info_of(t);
    if (t == TSL_DTYPE_BF16 || (d->is_float && d->bits <= 8)) return TSL_DTYPE_F32;
    if (!d->is_float && t != TSL_DTYPE_BOOL && d->bits < 8) return d->is_signed ? TSL_DTYPE_I8 : TSL_DTYPE_U8;
    return t;
}

/* Gather t's elements in C order into buf, converted to npy_file_dtype. */
static void npy_gather(const DLTensor *t, tsl_dtype dtype, unsigned char *buf, int64_t n)
{
    int64_t strides[TSL_MAX_RANK], idx[TSL_MAX_RANK] = {0};
    api_tensor_strides(t, strides);
    size_t esize = tsl_dtype_size(dtype);
    tsl_dtype fdt = npy_file_dtype(dtype);
    const unsigned char *base = (const unsigned char *)t->data + t->byte_offset;
    for (int64_t k = 0; k < n; k++) {
        int64_t off = 0;
        for (int d = 0; d < t->ndim; d++) off += idx[d] * strides[d];
        const unsigned char *src = base + off * (int64_t)esize;
        if (fdt != dtype) {
            dtype_set(fdt, buf, k, dtype_get(dtype, base, off));
        } else {
            memcpy(buf + (size_t)k * esize, src, esize);
        }
        for (int d = t->ndim - 1; d >= 0; d--) { /* odometer */
            if (++idx[d] < t->shape[d]) break;
            idx[d] = 0;
        }
    }
}

static int npy_write_all(int fd, const void *p, size_t len)
{
    const char *c = p;
    while (len) {
        ssize_t w = write(fd, c, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return 0;
        c += w;
        len -= (size_t)w;
    }
    return 1;
}

/* Write the parts to `path` atomically: into a new file beside it
 * (.NAME.PID.N.tmp, in the same folder so the rename cannot cross file
 * systems), synced, then renamed over it; on any failure the temporary
 * file is removed and `path` is as it was. A path that exists and is not
 * a regular file (/dev/null, a FIFO, a terminal) is written in place: it
 * is no file whose contents a failure could destroy, and renaming over it
 * would replace the device. A symbolic link is followed: its target is
 * replaced. The new file gets the old file's permissions, else 0666 less
 * the umask, as fopen would give it. */
static tsl_status npy_write_atomic(tsl_context *ctx, const char *path, const void *const *parts,
                                   const size_t *lens, int nparts)
{
    struct stat sb;
    int exists = stat(path, &sb) == 0;
    if (exists && !S_ISREG(sb.st_mode)) {
        int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
        if (fd < 0) return api_error(ctx, TSL_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
        int ok = 1;
        for (int i = 0; i < nparts && ok; i++) ok = npy_write_all(fd, parts[i], lens[i]);
        int e = errno;
        if (close(fd) != 0 && ok) ok = 0, e = errno;
        return ok ? TSL_OK : api_error(ctx, TSL_ERR_IO, "cannot write '%s': %s", path, strerror(e));
    }
    char *real = NULL;
    if (exists) real = realpath(path, NULL); /* a link's target */
    const char *dst = real ? real : path;
    const char *slash = strrchr(dst, '/');
    /* a fresh name, created with mode 0666 so the kernel applies the
     * umask (umask() itself cannot be read without a race) */
    static _Atomic unsigned long seq;
    char *tmp = NULL;
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < 64; tries++) {
        strbuf b = {0};
        unsigned long k = ++seq;
        if (slash) sb_printf(&b, "%.*s/.%s.%ld.%lu.tmp", (int)(slash - dst), dst, slash + 1, (long)getpid(), k);
        else sb_printf(&b, ".%s.%ld.%lu.tmp", dst, (long)getpid(), k);
        free(tmp);
        tmp = sb_take(&b);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    tsl_status st = TSL_OK;
    if (fd < 0) {
        st = api_error(ctx, TSL_ERR_IO, "cannot create '%s' (writing it through '%s'): %s", path, tmp,
                       strerror(errno));
    } else {
        int ok = !exists || fchmod(fd, sb.st_mode & 07777) == 0;
        for (int i = 0; i < nparts && ok; i++) ok = npy_write_all(fd, parts[i], lens[i]);
        if (ok) ok = fsync(fd) == 0;
        int e = errno;
        if (close(fd) != 0 && ok) ok = 0, e = errno;
        if (ok && rename(tmp, dst) != 0) ok = 0, e = errno;
        if (!ok) {
            unlink(tmp);
            st = api_error(ctx, TSL_ERR_IO, "cannot write '%s': %s%s", path, strerror(e),
                           exists ? " (the file there is unchanged)" : "");
        }
    }
    free(tmp);
    free(real);
    return st;
}

tsl_status tsl_npy_write(TSL_KEEP tsl_context *ctx, TSL_KEEP const char *path,
                         TSL_KEEP const DLTensor *t)
{
    if (!path) return api_error(ctx, TSL_ERR_ARG, "tsl_npy_write: path is NULL");
    tsl_dtype dtype;
    tsl_status st = api_tensor_check(ctx, t, "tsl_npy_write", &dtype);
    if (st) return st;
    tsl_dtype file_dtype = npy_file_dtype(dtype);
    const char *descr = NULL;
    for (size_t i = 0; i < TSL_COUNTOF(npy_descrs); i++)
        if (npy_descrs[i].t == file_dtype) descr = npy_descrs[i].descr;
    TSL_ASSERT(descr);

    strbuf h = {0};
    sb_printf(&h, "{'descr': '%c%s', 'fortran_order': False, 'shape': (",
              tsl_dtype_size(file_dtype) == 1 ? '|' : '<', descr);
    for (int d = 0; d < t->ndim; d++)
        sb_printf(&h, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
    sb_puts(&h, t->ndim == 1 ? ",), }" : "), }");
    while ((10 + h.len + 1) % 64 != 0) sb_putc(&h, ' ');
    sb_putc(&h, '\n');

    int64_t n = api_shape_numel(t->ndim, t->shape);
    size_t fesize = tsl_dtype_size(file_dtype);
    size_t bytes = (size_t)n * fesize;
    unsigned char *buf = malloc(bytes ? bytes : 1);
    if (!buf) {
        sb_free(&h);
        return api_error(ctx, TSL_ERR_NOMEM, "out of memory: %zu bytes writing '%s'", bytes,
                         path);
    }
    npy_gather(t, dtype, buf, n);

    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(h.len & 0xff),
                             (unsigned char)(h.len >> 8)};
    const void *parts[3] = {pre, h.buf, buf};
    size_t lens[3] = {10, h.len, bytes};
    st = npy_write_atomic(ctx, path, parts, lens, 3);
    free(buf);
    sb_free(&h);
    return st;
}
