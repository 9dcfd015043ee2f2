/* test_data.c - `lbscale train`'s data and model: IDX validation on small
 * generated files (every error names the file), the teacher fallback,
 * sharding, and the MLP's gradients against finite differences, including
 * the skipped weight-gradient GEMMs of dropped layers. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "train/data.h"
#include "train/mlp.h"
#include "train/shards.h"
#include "lbscale/rng.h"

static char dir[256];

static void mkdir_tmp(void)
{
    snprintf(dir, sizeof dir, "%s/lbs-data.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    cr_assert_not_null(mkdtemp(dir));
}

static void rm_tmp(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* Write an IDX ubyte file: magic, dims (big-endian), then data_len bytes
 * of payload (value i % mod), optionally gzip-compressed. */
static void write_idx(const char *name, uint32_t magic, int ndim,
                      const uint32_t *dims, size_t data_len, int mod, int gz)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    size_t len = 4 + 4 * (size_t)ndim + data_len;
    uint8_t *b = malloc(len);
    cr_assert_not_null(b);
    for (int i = 0; i < 4; i++)
        b[i] = (uint8_t)(magic >> (24 - 8 * i));
    for (int d = 0; d < ndim; d++)
        for (int i = 0; i < 4; i++)
            b[4 + 4 * d + i] = (uint8_t)(dims[d] >> (24 - 8 * i));
    for (size_t i = 0; i < data_len; i++)
        b[4 + 4 * (size_t)ndim + i] = (uint8_t)(i % (size_t)mod);
    if (gz) {
        gzFile f = gzopen(p, "wb");
        cr_assert_not_null(f);
        cr_assert_eq(gzwrite(f, b, (unsigned)len), (int)len);
        gzclose(f);
    } else {
        FILE *f = fopen(p, "wb");
        cr_assert_not_null(f);
        cr_assert_eq(fwrite(b, 1, len, f), len);
        fclose(f);
    }
    free(b);
}

/* A complete, valid 4-file set: n_tr / n_te images of 2x3 pixels. */
static void write_set(size_t n_tr, size_t n_te, int gz)
{
    uint32_t di[3] = {(uint32_t)n_tr, 2, 3}, dl[1] = {(uint32_t)n_tr};
    write_idx(gz ? "train-images-idx3-ubyte.gz" : "train-images-idx3-ubyte",
              0x803, 3, di, n_tr * 6, 251, gz);
    write_idx(gz ? "train-labels-idx1-ubyte.gz" : "train-labels-idx1-ubyte",
              0x801, 1, dl, n_tr, 10, gz);
    di[0] = dl[0] = (uint32_t)n_te;
    write_idx("t10k-images-idx3-ubyte", 0x803, 3, di, n_te * 6, 251, 0);
    write_idx("t10k-labels-idx1-ubyte", 0x801, 1, dl, n_te, 10, 0);
}

static void path(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", dir, name);
}

TestSuite(idx, .init = mkdir_tmp, .fini = rm_tmp);

Test(idx, valid_plain_and_gzip)
{
    for (int gz = 0; gz < 2; gz++) {
        write_set(20, 7, gz);
        struct dataset d;
        struct lbs_err e;
        cr_assert_eq(data_load_idx_dir(dir, &d, &e), 0, "%s", e.msg);
        cr_assert_eq(d.n_train, 20);
        cr_assert_eq(d.n_test, 7);
        cr_assert_eq(d.dim, 6);
        cr_assert_eq(d.classes, 10);
        cr_assert_eq(d.x_train[7], 7);
        cr_assert_eq(d.y_train[13], 3);
        cr_assert_str_eq(d.name, "fashion-mnist");
        data_free(&d);
        char p[512];
        path(p, sizeof p, "train-images-idx3-ubyte");
        unlink(p);
        path(p, sizeof p, "train-labels-idx1-ubyte");
        unlink(p);
    }
}

/* idx_read must fail with code and a message holding the file's path and
 * the fragment. */
static void expect_fail(const char *name, int ndim, int code,
                        const char *frag)
{
    char p[512];
    path(p, sizeof p, name);
    uint8_t *data = NULL;
    size_t dims[3];
    struct lbs_err e = {{0}};
    int rc = idx_read(p, ndim, &data, dims, &e);
    cr_assert_eq(rc, code, "%s: rc %d, msg '%s'", name, rc, e.msg);
    cr_assert_null(data);
    cr_assert(strstr(e.msg, p), "message does not name the file: %s", e.msg);
    cr_assert(strstr(e.msg, frag), "message lacks '%s': %s", frag, e.msg);
}

Test(idx, bad_magic)
{
    uint32_t d[3] = {4, 2, 3};
    write_idx("a", 0x0804, 3, d, 24, 7, 0);      /* wrong element type */
    expect_fail("a", 3, -EINVAL, "bad magic number 0x00000804");
    write_idx("b", 0x0801, 1, d, 4, 7, 1);       /* labels where images */
    expect_fail("b", 3, -EINVAL, "expected 0x00000803");
    write_idx("c", 0x12340803, 3, d, 24, 7, 0);  /* garbage high bytes */
    expect_fail("c", 3, -EINVAL, "bad magic");
}

Test(idx, wrong_dims)
{
    uint32_t d[3] = {4, 0, 3};
    write_idx("zero", 0x803, 3, d, 0, 7, 0);
    expect_fail("zero", 3, -EINVAL, "dimension 1 is 0");
    uint32_t big[3] = {0x7fffffff, 0x7fffffff, 4};
    write_idx("huge", 0x803, 3, big, 0, 7, 0);
    expect_fail("huge", 3, -EINVAL, "dimension");
    /* dims promise fewer bytes than the file has */
    uint32_t s[3] = {2, 2, 3};
    write_idx("long", 0x803, 3, s, 24 + 5, 7, 0);
    expect_fail("long", 3, -EINVAL, "longer than its header says");
}

/* issue 14 (8): only regular files, opened without blocking (a FIFO
 * would wait for a writer forever); a header that promises the 1 GiB cap
 * over a few bytes is refused as truncated, the payload read as it comes */
Test(idx, not_regular_and_big_promise)
{
    char p[512];
    path(p, sizeof p, "fifo");
    cr_assert_eq(mkfifo(p, 0600), 0);
    expect_fail("fifo", 3, -EINVAL, "not a regular file");
    uint32_t d[3] = {1024, 1024, 1024};
    write_idx("promise", 0x803, 3, d, 100, 7, 0);
    expect_fail("promise", 3, -EINVAL, "promises 1073741824 data bytes, "
                                       "the file has 100");
    write_idx("promise.gz", 0x803, 3, d, 3000000, 7, 1);
    expect_fail("promise.gz", 3, -EINVAL, "the file has 3000000");
}

Test(idx, truncated)
{
    uint32_t d[3] = {10, 2, 3};
    write_idx("short", 0x803, 3, d, 59, 7, 0);
    expect_fail("short", 3, -EINVAL, "truncated: the header promises 60 "
                                     "data bytes, the file has 59");
    write_idx("shortgz", 0x803, 3, d, 30, 7, 1);
    expect_fail("shortgz", 3, -EINVAL, "truncated");
    write_idx("hdr", 0x803, 0, d, 0, 7, 0);     /* magic only */
    expect_fail("hdr", 3, -EINVAL, "truncated: 4 of 16 header bytes");
    /* a gzip stream cut in the middle */
    write_idx("cut.gz", 0x803, 3, d, 60, 7, 1);
    char p[512];
    path(p, sizeof p, "cut.gz");
    FILE *f = fopen(p, "rb");
    uint8_t buf[512];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    f = fopen(p, "wb");
    fwrite(buf, 1, n - 12, f);
    fclose(f);
    expect_fail("cut.gz", 3, -EINVAL, "truncated");
    FILE *z = fopen(p, "wb");   /* empty file */
    fclose(z);
    expect_fail("cut.gz", 3, -EINVAL, "truncated: 0 of 4 header bytes");
}

Test(idx, missing)
{
    expect_fail("nope", 1, -ENOENT, "no such file");
    write_set(20, 7, 0);
    char p[512];
    path(p, sizeof p, "t10k-labels-idx1-ubyte");
    unlink(p);
    struct dataset d;
    struct lbs_err e;
    cr_assert_eq(data_load_idx_dir(dir, &d, &e), -ENOENT);
    cr_assert(strstr(e.msg, "t10k-labels-idx1-ubyte"), "%s", e.msg);
    cr_assert_eq(data_idx_dir_present(dir), 0);
}

Test(idx, pair_mismatch_and_label_range)
{
    write_set(20, 7, 0);
    uint32_t dl[1] = {19};
    write_idx("train-labels-idx1-ubyte", 0x801, 1, dl, 19, 10, 0);
    struct dataset d;
    struct lbs_err e;
    cr_assert_eq(data_load_idx_dir(dir, &d, &e), -EINVAL);
    cr_assert(strstr(e.msg, "train-labels-idx1-ubyte: 19 labels, but "
                     "train-images-idx3-ubyte has 20 images"), "%s", e.msg);
    dl[0] = 20;
    write_idx("train-labels-idx1-ubyte", 0x801, 1, dl, 20, 12, 0);
    cr_assert_eq(data_load_idx_dir(dir, &d, &e), -EINVAL);
    cr_assert(strstr(e.msg, "train-labels-idx1-ubyte: label 10 at index 10"),
              "%s", e.msg);
}

Test(data, teacher_balanced_and_deterministic)
{
    struct dataset a, b;
    struct lbs_err e;
    cr_assert_eq(data_make_teacher(3, 4000, 1000, 50, 10, &a, &e), 0);
    cr_assert_eq(data_make_teacher(3, 4000, 1000, 50, 10, &b, &e), 0);
    cr_assert_eq(memcmp(a.x_train, b.x_train, 4000 * 50), 0);
    cr_assert_eq(memcmp(a.y_test, b.y_test, 1000), 0);
    long cnt[10] = {0};
    for (size_t i = 0; i < a.n_train; i++) {
        cr_assert_lt(a.y_train[i], 10);
        cnt[a.y_train[i]]++;
    }
    for (int c = 0; c < 10; c++)
        cr_assert_gt(cnt[c], 4000 / 10 / 4, "class %d has %ld", c, cnt[c]);
    cr_assert_str_eq(a.name, "teacher");
    data_free(&a);
    data_free(&b);
}

Test(data, shards_partition_and_shuffle)
{
    struct dataset d;
    struct lbs_err e;
    cr_assert_eq(data_make_teacher(1, 1003, 10, 4, 3, &d, &e), 0);
    int seen[1003] = {0};
    for (int r = 0; r < 4; r++) {
        size_t *idx, n, *idx2, n2;
        cr_assert_eq(data_shard(&d, 9, r, 4, &idx, &n, &e), 0);
        cr_assert_eq(data_shard(&d, 9, r, 4, &idx2, &n2, &e), 0);
        cr_assert_eq(n, 250);
        cr_assert_eq(memcmp(idx, idx2, n * sizeof *idx), 0);
        data_shuffle(idx, n, 9, 1, r);
        data_shuffle(idx2, n, 9, 1, r);
        cr_assert_eq(memcmp(idx, idx2, n * sizeof *idx), 0);
        for (size_t i = 0; i < n; i++)
            seen[idx[i]]++;
        free(idx);
        free(idx2);
    }
    int total = 0;
    for (int i = 0; i < 1003; i++) {
        cr_assert_leq(seen[i], 1, "sample %d in two shards", i);
        total += seen[i];
    }
    cr_assert_eq(total, 1000);
    size_t *idx, n;
    cr_assert_eq(data_shard(&d, 9, 0, 2000, &idx, &n, &e), -EINVAL);
    data_free(&d);
}

/* All ranks' Dirichlet shards of d: every sample exactly once, the same
 * for the same seed; counts[] as the library reports them. */
static void dirichlet_all(const struct dataset *d, uint64_t seed,
                          double alpha, int P, size_t *counts)
{
    int *seen = calloc(d->n_train, sizeof *seen);
    struct lbs_err e;
    cr_assert_not_null(seen);
    for (int r = 0; r < P; r++) {
        size_t *idx, n, *idx2, n2;
        cr_assert_eq(shards_dirichlet(d, seed, alpha, r, P, &idx, &n, counts,
                                      &e), 0, "%s", e.msg);
        cr_assert_eq(shards_dirichlet(d, seed, alpha, r, P, &idx2, &n2, NULL,
                                      &e), 0);
        cr_assert_eq(n, n2);
        cr_assert_eq(memcmp(idx, idx2, n * sizeof *idx), 0,
                     "same seed, different shard");
        cr_assert_geq(n, SHARDS_DIRICHLET_MIN);
        size_t want[16] = {0};
        for (size_t i = 0; i < n; i++) {
            cr_assert_lt(idx[i], d->n_train);
            seen[idx[i]]++;
            want[d->y_train[idx[i]]]++;
        }
        for (size_t c = 0; c < d->classes; c++)
            cr_assert_eq(counts[(size_t)r * d->classes + c], want[c],
                         "rank %d class %zu: counts %zu, shard %zu", r, c,
                         counts[(size_t)r * d->classes + c], want[c]);
        free(idx);
        free(idx2);
    }
    for (size_t i = 0; i < d->n_train; i++)
        cr_assert_eq(seen[i], 1, "sample %zu in %d shards", i, seen[i]);
    free(seen);
}

Test(shards, dirichlet_is_a_deterministic_partition)
{
    struct dataset d;
    struct lbs_err e;
    cr_assert_eq(data_make_teacher(1, 6000, 10, 4, 10, &d, &e), 0);
    size_t c1[8 * 10], c2[8 * 10];
    dirichlet_all(&d, 7, 0.1, 8, c1);
    dirichlet_all(&d, 7, 1.0, 8, c2);
    dirichlet_all(&d, 8, 0.1, 8, c2);
    cr_assert(memcmp(c1, c2, sizeof c1), "seeds 7 and 8 split alike");
    /* more ranks than a tiny set allows the minimum for: a clear error */
    size_t *idx, n;
    cr_assert_eq(shards_dirichlet(&d, 7, 0.1, 0, 7000, &idx, &n, NULL, &e),
                 -EINVAL);
    data_free(&d);
}

Test(shards, alpha_sets_the_label_skew)
{
    struct dataset d;
    struct lbs_err e;
    cr_assert_eq(data_make_teacher(1, 20000, 10, 4, 10, &d, &e), 0);
    size_t c[8 * 10];
    /* alpha 1000: every rank's label histogram within a few points of
     * the global one (total variation ~ sampling noise) */
    dirichlet_all(&d, 3, 1000, 8, c);
    double tv_big = shards_label_tv(c, 8, 10);
    cr_assert_lt(tv_big, 0.03, "alpha 1000: mean TV %g", tv_big);
    for (int r = 0; r < 8; r++) {
        size_t n = 0;
        for (int k = 0; k < 10; k++)
            n += c[r * 10 + k];
        cr_assert(n > 20000 / 8 * 0.9 && n < 20000 / 8 * 1.1,
                  "alpha 1000: rank %d has %zu samples", r, n);
    }
    /* alpha 0.1: most of a rank's samples in few classes */
    dirichlet_all(&d, 3, 0.1, 8, c);
    double tv_small = shards_label_tv(c, 8, 10);
    cr_assert_gt(tv_small, 0.4, "alpha 0.1: mean TV %g", tv_small);
    int skewed = 0;
    for (int r = 0; r < 8; r++) {
        size_t n = 0, mx = 0;
        for (int k = 0; k < 10; k++) {
            n += c[r * 10 + k];
            mx = c[r * 10 + k] > mx ? c[r * 10 + k] : mx;
        }
        skewed += mx * 2 > n;     /* one class is over half the shard */
    }
    cr_assert_geq(skewed, 4, "alpha 0.1: %d of 8 ranks dominated by a "
                  "class", skewed);
    /* the exact iid histogram gives TV 0 */
    size_t flat[2 * 3] = {5, 5, 10, 5, 5, 10};
    cr_assert_float_eq(shards_label_tv(flat, 2, 3), 0.0, 1e-12);
    size_t split[2 * 2] = {10, 0, 0, 10};
    cr_assert_float_eq(shards_label_tv(split, 2, 2), 0.5, 1e-12);
    data_free(&d);
}

Test(shards, parse)
{
    struct lbs_err e;
    double a = -1;
    cr_assert_eq(shards_parse("iid", &a, &e), 0);
    cr_assert_eq(a, 0);
    cr_assert_eq(shards_parse("dirichlet:alpha=0.1", &a, &e), 0);
    cr_assert_float_eq(a, 0.1, 1e-15);
    const char *bad[] = {"", "dirichlet", "dirichlet:alpha=", "dirichlet:"
                         "alpha=0", "dirichlet:alpha=-1", "dirichlet:alpha=x",
                         "dirichlet:alpha=nan", "dirichlet:alpha=inf",
                         "dirichlet:alpha=1e7", "dirichlet:alpha=0.1x",
                         "dirichlet:beta=1", "IID"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_eq(shards_parse(bad[i], &a, &e), -EINVAL, "'%s'", bad[i]);
}

Test(mlp, parse)
{
    size_t dims[MLP_MAX_DENSE + 1];
    int nd;
    struct lbs_err e;
    cr_assert_eq(mlp_parse("mlp:784-512-256-10", dims, &nd, &e), 0);
    cr_assert_eq(nd, 3);
    cr_assert_eq(dims[1], 512);
    cr_assert_eq(mlp_parse("mlp:784", dims, &nd, &e), -EINVAL);
    cr_assert_eq(mlp_parse("mlp:784-0-10", dims, &nd, &e), -EINVAL);
    cr_assert_eq(mlp_parse("mlp:784-x-10", dims, &nd, &e), -EINVAL);
    cr_assert_eq(mlp_parse("cnn:1-2", dims, &nd, &e), -EINVAL);
    cr_assert_eq(mlp_parse("mlp:784-10-", dims, &nd, &e), -EINVAL);
}

/* Summed cross-entropy of the model on (x, y). */
static double loss_at(struct mlp *m, const float *x, const uint8_t *y,
                      size_t b)
{
    long c = 0;
    mlp_forward(m, m->w, x, b);
    return mlp_loss(m, y, b, 0, 0, &c);
}

Test(mlp, gradient_matches_finite_differences)
{
    const size_t dims[] = {7, 6, 5, 4};
    const size_t B = 5;
    struct mlp *m;
    struct lbs_err e;
    cr_assert_eq(mlp_new(dims, 3, B, &m, &e), 0);
    mlp_init(m, 42);
    uint64_t k = lbs_rng_key(5, 0, 0);
    for (size_t i = 0; i < m->nparams; i++)   /* non-zero biases too */
        m->w[i] += 0.1f * (float)(lbs_rng_uniform(k, 1000 + i) - 0.5);
    float x[5 * 7];
    uint8_t y[5] = {0, 3, 1, 2, 3};
    for (size_t i = 0; i < B * 7; i++)
        x[i] = (float)(2 * lbs_rng_uniform(k, i) - 1);
    mlp_forward(m, m->w, x, B);
    long c = 0;
    mlp_loss(m, y, B, 1, 1.0f, &c);
    mlp_backward(m, x, B, NULL, 0);
    float *ana = malloc(m->nparams * sizeof *ana);
    memcpy(ana, m->g, m->nparams * sizeof *ana);
    const float h = 1e-3f;
    double worst = 0;
    for (size_t i = 0; i < m->nparams; i++) {
        float w0 = m->w[i];
        m->w[i] = w0 + h;
        double lp = loss_at(m, x, y, B);
        m->w[i] = w0 - h;
        double lm = loss_at(m, x, y, B);
        m->w[i] = w0;
        double num = (lp - lm) / (2.0 * h);
        double err = fabs(num - ana[i]) / (1e-2 + fabs(num));
        worst = err > worst ? err : worst;
        cr_assert_lt(err, 2e-2, "param %zu: analytic %g, numeric %g", i,
                     ana[i], num);
    }
    cr_log_info("worst relative gradient error %.2e", worst);

    /* Accumulation: two half batches summed == the whole batch. */
    mlp_forward(m, m->w, x, 2);
    mlp_loss(m, y, 2, 1, 1.0f, &c);
    mlp_backward(m, x, 2, NULL, 0);
    mlp_forward(m, m->w, x + 2 * 7, 3);
    mlp_loss(m, y + 2, 3, 1, 1.0f, &c);
    mlp_backward(m, x + 2 * 7, 3, NULL, 1);
    for (size_t i = 0; i < m->nparams; i++)
        cr_assert_float_eq(m->g[i], ana[i], 1e-5f, "accumulated %zu", i);

    /* Dropped layers: no weight gradient written (sentinels stay), but the
     * activation gradient still flows through them to the layers below. */
    uint8_t keep[6] = {1, 1, 0, 0, 1, 1};
    for (size_t i = 0; i < m->nparams; i++)
        m->g[i] = -7.0f;
    mlp_forward(m, m->w, x, B);
    mlp_loss(m, y, B, 1, 1.0f, &c);
    mlp_backward(m, x, B, keep, 0);
    for (size_t l = 0; l < m->nlayers; l++) {
        const struct lbs_layer *L = &m->layers[l];
        size_t off = (size_t)(L->g - m->g);
        for (size_t i = 0; i < L->n; i++) {
            if (keep[l])
                cr_assert_float_eq(L->g[i], ana[off + i], 1e-6f,
                                   "kept layer %zu", l);
            else
                cr_assert_eq(L->g[i], -7.0f, "dropped layer %zu written", l);
        }
    }
    free(ana);
    mlp_free(m);
}
