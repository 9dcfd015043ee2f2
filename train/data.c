/* data.c - IDX loader with validation, the teacher-network fallback,
 * sharding and shuffling (see data.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cblas.h>

#include "data.h"
#include "lbscale/rng.h"

/* Largest IDX payload accepted (1 GiB): far above any data set this
 * trainer handles, low enough that a corrupt header cannot make us
 * allocate the machine away. */
#define IDX_MAX_BYTES ((size_t)1 << 30)

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* Read exactly len bytes; returns bytes read (< len on EOF or error). */
static size_t gz_read_all(gzFile f, void *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        unsigned chunk = len - got > (1u << 30) ? 1u << 30
                                                : (unsigned)(len - got);
        int r = gzread(f, (char *)buf + got, chunk);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    return got;
}

/* A gzip stream error (corrupt or cut data) as a message, or NULL. */
static const char *gz_problem(gzFile f)
{
    int code = 0;
    const char *m = gzerror(f, &code);
    return code != Z_OK && code != Z_STREAM_END ? m : NULL;
}

/* Up to total bytes of payload into *buf, grown as data arrives: a header
 * that promises 1 GiB over a 20-byte file costs 1 MiB, not 1 GiB. */
static int read_payload(gzFile f, const char *path, size_t total,
                        uint8_t **buf, size_t *got, struct lbs_err *err)
{
    size_t cap = 0;
    *buf = NULL;
    *got = 0;
    while (*got < total) {
        if (*got == cap) {
            size_t ncap = cap ? 2 * cap : (size_t)1 << 20;
            ncap = ncap < total ? ncap : total;
            uint8_t *q = realloc(*buf, ncap);
            if (!q) {
                free(*buf);
                *buf = NULL;
                return lbs_err_set(err, -ENOMEM, "%s: out of memory", path);
            }
            *buf = q;
            cap = ncap;
        }
        size_t r = gz_read_all(f, *buf + *got, cap - *got);
        *got += r;
        if (*got < cap)
            break;   /* end of the data (or an error gz_problem reports) */
    }
    return 0;
}

int idx_read(const char *path, int ndim, uint8_t **data, size_t dims[3],
             struct lbs_err *err)
{
    *data = NULL;
    struct stat st;
    /* the type is checked on the descriptor that is read (no window for a
     * swap to a FIFO); O_NONBLOCK: opening a FIFO must not wait */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0 && errno == ENOENT)
        return lbs_err_set(err, -ENOENT, "%s: no such file", path);
    if (fd < 0)
        return lbs_err_set(err, -EINVAL, "%s: cannot open: %s", path,
                           strerror(errno));
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return lbs_err_set(err, -EINVAL, "%s: not a regular file", path);
    }
    gzFile f = gzdopen(fd, "rb");
    if (!f) {
        close(fd);
        return lbs_err_set(err, -ENOMEM, "%s: out of memory", path);
    }
    int rc = 0;
    uint8_t hdr[16];
    size_t hlen = 4 + 4 * (size_t)ndim;
    size_t got = gz_read_all(f, hdr, 4);
    const uint32_t want = 0x0800u | (uint32_t)ndim;
    const char *what = ndim == 1 ? "labels" : "images";
    if (got < 4) {
        const char *p = gz_problem(f);
        rc = lbs_err_set(err, -EINVAL, "%s: truncated: %zu of 4 header bytes"
                         "%s%s", path, got, p ? "; gzip: " : "", p ? p : "");
        goto out;
    }
    uint32_t magic = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 |
                     (uint32_t)hdr[2] << 8 | hdr[3];
    if (magic != want) {
        rc = lbs_err_set(err, -EINVAL, "%s: bad magic number 0x%08x, "
                         "expected 0x%08x (IDX unsigned-byte %d-D %s)",
                         path, magic, want, ndim, what);
        goto out;
    }
    got = gz_read_all(f, hdr + 4, hlen - 4);
    if (got < hlen - 4) {
        rc = lbs_err_set(err, -EINVAL, "%s: truncated: %zu of %zu header "
                         "bytes", path, got + 4, hlen);
        goto out;
    }
    size_t total = 1;
    for (int i = 0; i < ndim; i++) {
        const uint8_t *p = hdr + 4 + 4 * i;
        uint32_t v = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
                     (uint32_t)p[2] << 8 | p[3];
        if (v == 0 || v > IDX_MAX_BYTES) {
            rc = lbs_err_set(err, -EINVAL, "%s: dimension %d is %u (must "
                             "be 1..%zu)", path, i, v, IDX_MAX_BYTES);
            goto out;
        }
        dims[i] = v;
        total *= v;
        if (total > IDX_MAX_BYTES) {
            rc = lbs_err_set(err, -EINVAL, "%s: dimensions describe more "
                             "than %zu bytes", path, IDX_MAX_BYTES);
            goto out;
        }
    }
    uint8_t *buf = NULL;
    if ((rc = read_payload(f, path, total, &buf, &got, err)))
        goto out;
    if (got < total) {
        const char *p = gz_problem(f);
        rc = lbs_err_set(err, -EINVAL, "%s: truncated: the header promises "
                         "%zu data bytes, the file has %zu%s%s", path, total,
                         got, p ? "; gzip: " : "", p ? p : "");
        free(buf);
        goto out;
    }
    uint8_t extra;
    if (gz_read_all(f, &extra, 1) != 0) {
        rc = lbs_err_set(err, -EINVAL, "%s: longer than its header says "
                         "(%zu data bytes expected): not an IDX %s file",
                         path, total, what);
        free(buf);
        goto out;
    }
    const char *p = gz_problem(f);
    if (p) {
        rc = lbs_err_set(err, -EINVAL, "%s: truncated or corrupt gzip "
                         "stream: %s", path, p);
        free(buf);
        goto out;
    }
    *data = buf;
out:
    gzclose(f);
    return rc;
}

/* dir/name, or dir/name.gz when only that exists.  1 if found. */
static int find_file(const char *dir, const char *name, char *out,
                     size_t len)
{
    struct stat st;
    snprintf(out, len, "%s/%s", dir, name);
    if (!stat(out, &st))
        return 1;
    snprintf(out, len, "%s/%s.gz", dir, name);
    return !stat(out, &st);
}

static const char *const idx_names[4] = {
    "train-images-idx3-ubyte", "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte",
};

int data_idx_dir_present(const char *dir)
{
    char p[4096];
    for (int i = 0; i < 4; i++)
        if (!find_file(dir, idx_names[i], p, sizeof p))
            return 0;
    return 1;
}

static void set_lut(struct dataset *d, float mean, float std)
{
    for (int p = 0; p < 256; p++)
        d->lut[p] = ((float)p / 255.0f - mean) / std;
}

/* One images/labels pair: counts must agree, labels must be < classes. */
static int load_pair(const char *dir, const char *img_name,
                     const char *lab_name, uint8_t **x, uint8_t **y,
                     size_t *n, size_t *dim, struct lbs_err *err)
{
    char ip[4096], lp[4096];
    if (!find_file(dir, img_name, ip, sizeof ip))
        return lbs_err_set(err, -ENOENT, "%s/%s(.gz): no such file", dir,
                           img_name);
    if (!find_file(dir, lab_name, lp, sizeof lp))
        return lbs_err_set(err, -ENOENT, "%s/%s(.gz): no such file", dir,
                           lab_name);
    size_t di[3], dl[3];
    int rc = idx_read(ip, 3, x, di, err);
    if (rc)
        return rc;
    rc = idx_read(lp, 1, y, dl, err);
    if (rc)
        goto fail;
    if (dl[0] != di[0]) {
        rc = lbs_err_set(err, -EINVAL, "%s: %zu labels, but %s has %zu "
                         "images", lp, dl[0], base_name(ip), di[0]);
        goto fail;
    }
    for (size_t i = 0; i < dl[0]; i++)
        if ((*y)[i] >= 10) {
            rc = lbs_err_set(err, -EINVAL, "%s: label %u at index %zu is "
                             "not in 0..9", lp, (*y)[i], i);
            goto fail;
        }
    *n = di[0];
    *dim = di[1] * di[2];
    return 0;
fail:
    free(*x);
    free(*y);
    *x = *y = NULL;
    return rc;
}

int data_load_idx_dir(const char *dir, struct dataset *d,
                      struct lbs_err *err)
{
    memset(d, 0, sizeof *d);
    size_t dim_tr, dim_te;
    int rc = load_pair(dir, idx_names[0], idx_names[1], &d->x_train,
                       &d->y_train, &d->n_train, &dim_tr, err);
    if (rc)
        return rc;
    rc = load_pair(dir, idx_names[2], idx_names[3], &d->x_test, &d->y_test,
                   &d->n_test, &dim_te, err);
    if (rc) {
        data_free(d);
        return rc;
    }
    if (dim_te != dim_tr) {
        data_free(d);
        return lbs_err_set(err, -EINVAL, "%s/%s: images of %zu pixels, but "
                           "the training images have %zu", dir, idx_names[2],
                           dim_te, dim_tr);
    }
    snprintf(d->name, sizeof d->name, "fashion-mnist");
    snprintf(d->source, sizeof d->source, "%s", dir);
    d->dim = dim_tr;
    d->classes = 10;
    /* Fashion-MNIST training-set pixel mean and standard deviation. */
    set_lut(d, 0.2860f, 0.3530f);
    return 0;
}

/* Standard normal from two counter draws (Box-Muller, cosine branch). */
static float gauss(uint64_t key, uint64_t i)
{
    double u1 = 1.0 - lbs_rng_uniform(key, 2 * i),
           u2 = lbs_rng_uniform(key, 2 * i + 1);
    return (float)(sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2));
}

int data_make_teacher(uint64_t seed, size_t n_train, size_t n_test,
                      size_t dim, size_t classes, struct dataset *d,
                      struct lbs_err *err)
{
    /* LAT latent factors per sample; pixels = a fixed random linear image
     * of them plus noise; labels = a fixed random tanh network of them. */
    enum { LAT = 16, HID = 32 };
    const float pix_sd = 40.0f;     /* pixel standard deviation (of 255) */
    memset(d, 0, sizeof *d);
    size_t n = n_train + n_test;
    uint8_t *x = malloc(n * dim), *y = malloc(n);
    float *s = malloc(n * LAT * sizeof *s);
    float *b = malloc(dim * LAT * sizeof *b);
    float *w1 = malloc(HID * LAT * sizeof *w1);
    float *w2 = malloc(classes * HID * sizeof *w2);
    float *row = malloc(dim * sizeof *row);
    double *mean = calloc(classes, sizeof *mean);
    float *z = malloc(n * classes * sizeof *z);
    int rc = 0;
    if (!x || !y || !s || !b || !w1 || !w2 || !row || !mean || !z) {
        rc = lbs_err_set(err, -ENOMEM, "teacher data set: out of memory");
        goto out;
    }
    uint64_t ks = lbs_rng_key(seed, 0x7eac0001u, 1),
             kw = lbs_rng_key(seed, 0x7eac0002u, 2),
             kn = lbs_rng_key(seed, 0x7eac0003u, 3);
    for (size_t i = 0; i < n * LAT; i++)
        s[i] = gauss(ks, i);
    for (size_t i = 0; i < dim * LAT; i++)       /* rows of unit variance */
        b[i] = gauss(kw, i) / sqrtf((float)LAT);
    for (size_t i = 0; i < HID * LAT; i++)
        w1[i] = gauss(kw, dim * LAT + i) / sqrtf((float)LAT);
    for (size_t i = 0; i < classes * HID; i++)
        w2[i] = 3.0f * gauss(kw, (dim + HID) * LAT + i) / sqrtf((float)HID);
    for (size_t r = 0; r < n; r++) {
        const float *sr = s + r * LAT;
        cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)dim, LAT, 1.0f, b, LAT,
                    sr, 1, 0.0f, row, 1);
        for (size_t j = 0; j < dim; j++) {
            uint64_t u = lbs_rng_u64(kn, r * dim + j);
            float v = 127.5f + pix_sd * row[j] +
                      (float)(int)(u % 17) - 8.0f;  /* +-8 pixel noise */
            x[r * dim + j] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v + 0.5f);
        }
        float h[HID];
        for (int k = 0; k < HID; k++) {
            float a = 0;
            for (int l = 0; l < LAT; l++)
                a += w1[k * LAT + l] * sr[l];
            h[k] = tanhf(a);
        }
        for (size_t c = 0; c < classes; c++) {
            float a = 0;
            for (int k = 0; k < HID; k++)
                a += w2[c * HID + k] * h[k];
            z[r * classes + c] = a;
            mean[c] += a;
        }
    }
    /* Remove each class's mean logit so that argmax labels are balanced. */
    for (size_t i = 0; i < n; i++) {
        size_t best = 0;
        double bv = -INFINITY;
        for (size_t c = 0; c < classes; c++) {
            double v = z[i * classes + c] - mean[c] / (double)n;
            if (v > bv) {
                bv = v;
                best = c;
            }
        }
        y[i] = (uint8_t)best;
    }
    set_lut(d, 0.5f, pix_sd / 255.0f);
    d->x_test = malloc(n_test * dim);
    d->y_test = malloc(n_test);
    if (!d->x_test || !d->y_test) {
        free(d->x_test);
        free(d->y_test);
        memset(d, 0, sizeof *d);
        rc = lbs_err_set(err, -ENOMEM, "teacher data set: out of memory");
        goto out;
    }
    memcpy(d->x_test, x + n_train * dim, n_test * dim);
    memcpy(d->y_test, y + n_train, n_test);
    d->x_train = x;     /* the tail beyond n_train is unused */
    d->y_train = y;
    x = y = NULL;
    snprintf(d->name, sizeof d->name, "teacher");
    snprintf(d->source, sizeof d->source, "generated, seed %llu",
             (unsigned long long)seed);
    d->dim = dim;
    d->classes = classes;
    d->n_train = n_train;
    d->n_test = n_test;
out:
    free(x);
    free(y);
    free(s);
    free(b);
    free(w1);
    free(w2);
    free(row);
    free(mean);
    free(z);
    return rc;
}

void data_truncate(struct dataset *d, size_t n_train, size_t n_test)
{
    if (n_train && n_train < d->n_train)
        d->n_train = n_train;
    if (n_test && n_test < d->n_test)
        d->n_test = n_test;
}

int data_hold_out(struct dataset *d, size_t n, struct lbs_err *err)
{
    if (n >= d->n_train)
        return lbs_err_set(err, -EINVAL, "--val %zu: the training set has "
                           "only %zu samples", n, d->n_train);
    d->n_train -= n;
    d->n_val = n;
    d->x_val = d->x_train + d->n_train * d->dim;
    d->y_val = d->y_train + d->n_train;
    return 0;
}

void data_gather_val(const struct dataset *d, size_t first, size_t n,
                     float *x, uint8_t *y)
{
    const uint8_t *p = d->x_val + first * d->dim;
    for (size_t i = 0; i < n * d->dim; i++)
        x[i] = d->lut[p[i]];
    memcpy(y, d->y_val + first, n);
}

void data_free(struct dataset *d)
{
    free(d->x_train);
    free(d->y_train);
    free(d->x_test);
    free(d->y_test);
    memset(d, 0, sizeof *d);
}

void data_permute(size_t *idx, size_t n, uint64_t key)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)lbs_rng_below(key, i, i);
        size_t t = idx[i - 1];
        idx[i - 1] = idx[j];
        idx[j] = t;
    }
}

int data_shard(const struct dataset *d, uint64_t seed, int rank, int size,
               size_t **idx, size_t *n, struct lbs_err *err)
{
    size_t per = d->n_train / (size_t)size;
    if (per == 0)
        return lbs_err_set(err, -EINVAL, "%zu training samples cannot be "
                           "split over %d ranks", d->n_train, size);
    size_t *all = malloc(d->n_train * sizeof *all);
    if (!all)
        return lbs_err_set(err, -ENOMEM, "out of memory");
    for (size_t i = 0; i < d->n_train; i++)
        all[i] = i;
    data_permute(all, d->n_train, lbs_rng_key(seed, 0x5a4dull, 0));
    memmove(all, all + (size_t)rank * per, per * sizeof *all);
    *idx = all;
    *n = per;
    return 0;
}

void data_shuffle(size_t *idx, size_t n, uint64_t seed, long pass, int rank)
{
    data_permute(idx, n, lbs_rng_key(seed ^ 0x5e0f1e5ull, (uint64_t)pass,
                                    (uint64_t)rank));
}

void data_gather(const struct dataset *d, const size_t *idx, size_t n,
                 float *x, uint8_t *y)
{
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p = d->x_train + idx[i] * d->dim;
        float *o = x + i * d->dim;
        for (size_t j = 0; j < d->dim; j++)
            o[j] = d->lut[p[j]];
        y[i] = d->y_train[idx[i]];
    }
}

void data_gather_test(const struct dataset *d, size_t first, size_t n,
                      float *x, uint8_t *y)
{
    const uint8_t *p = d->x_test + first * d->dim;
    for (size_t i = 0; i < n * d->dim; i++)
        x[i] = d->lut[p[i]];
    memcpy(y, d->y_test + first, n);
}
