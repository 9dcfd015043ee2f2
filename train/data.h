/* data.h - training data for `lbscale train` (bench/ only).
 *
 * Two sources:
 *   fashion-mnist  the IDX files of Debian's dataset-fashion-mnist package
 *                  (/usr/share/datasets/fashion-mnist, gzip or plain);
 *                  every file is validated (magic number, dimensions,
 *                  truncation, trailing bytes, label range, image/label
 *                  counts) and errors name the file.
 *   teacher        a generated classification task, the fallback when
 *                  the package is missing: 16 Gaussian latent factors per
 *                  sample; 8-bit "images" = a fixed random linear map of
 *                  them (pixel sd 40) plus +-8 noise; labels = a fixed
 *                  random teacher network of the factors (16 -> 32 tanh
 *                  -> classes, class means removed so the classes are
 *                  balanced).
 * Both keep the features as 8-bit values and normalise on the way out
 * (x = (p/255 - mean)/std), so the training set stays small in memory.
 *
 * Sharding and order are pure functions of the seed: one global
 * permutation of the training set (keyed by the seed) is cut into equal
 * shards, rank r taking shard r (the remainder of n_train / ranks is
 * dropped; these are --shards iid, the label-skewed Dirichlet shards are
 * shards.h's); each rank reshuffles its own shard at every pass (keyed by
 * seed, pass, rank).  Nothing depends on thread counts or timing.
 *
 * Ownership: the loaders fill a caller-provided struct dataset and
 * allocate its arrays; data_free releases them.  idx_read allocates *data
 * (free with free()).
 * Errors: 0 or a negative code with a message in err: -ENOENT a missing
 * file, -EINVAL a malformed one (both name the file), -ENOMEM.
 */
#ifndef LBS_DATA_H
#define LBS_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "lbscale/error.h"

#define DATA_FASHION_DIR "/usr/share/datasets/fashion-mnist"

struct dataset {
    char name[32];          /* "fashion-mnist" or "teacher" */
    char source[200];       /* the directory read, or "generated, seed S" */
    size_t dim, classes;    /* features per sample, label range */
    size_t n_train, n_test;
    uint8_t *x_train, *x_test;  /* n x dim, row-major, raw 8-bit values */
    uint8_t *y_train, *y_test;  /* labels in 0..classes-1 */
    size_t n_val;               /* held-out validation samples (data_hold_out) */
    const uint8_t *x_val, *y_val;   /* views into the training arrays */
    float lut[256];             /* p -> (p/255 - mean)/std */
};

/* Read an IDX unsigned-byte file of ndim dimensions (1 labels, 3 images);
 * plain or gzip-compressed, told apart by content.  dims[0..ndim) are
 * filled, *data holds the product of dims bytes. */
int idx_read(const char *path, int ndim, uint8_t **data, size_t dims[3],
             struct lbs_err *err);

/* Load train-{images-idx3,labels-idx1}-ubyte and t10k-... from dir (each
 * as is or with .gz).  -ENOENT naming the first missing file. */
int data_load_idx_dir(const char *dir, struct dataset *d,
                      struct lbs_err *err);
/* Does dir hold the four files (plain or .gz)?  1 or 0. */
int data_idx_dir_present(const char *dir);

/* The generated teacher task. */
int data_make_teacher(uint64_t seed, size_t n_train, size_t n_test,
                      size_t dim, size_t classes, struct dataset *d,
                      struct lbs_err *err);

/* Keep only the first n_train / n_test samples (0 = keep all). */
void data_truncate(struct dataset *d, size_t n_train, size_t n_test);

void data_free(struct dataset *d);

/* Hold out the last n training samples (of the file's order, so the same
 * split for every seed and rank count) as a validation set: x_val/y_val
 * point into the training arrays, n_train shrinks by n.  -EINVAL when n
 * leaves fewer than 1 training sample. */
int data_hold_out(struct dataset *d, size_t n, struct lbs_err *err);
/* Validation samples [first, first + n) into x and y. */
void data_gather_val(const struct dataset *d, size_t first, size_t n,
                     float *x, uint8_t *y);

/* Rank `rank`'s shard of the training set: *n = n_train / size indices,
 * allocated into *idx.  -ENOMEM, or -EINVAL when the shard is empty. */
int data_shard(const struct dataset *d, uint64_t seed, int rank, int size,
               size_t **idx, size_t *n, struct lbs_err *err);
/* Fisher-Yates shuffle of idx with draw i of lbs_rng stream key (the one
 * permutation the shards and shuffles below are made of). */
void data_permute(size_t *idx, size_t n, uint64_t key);
/* Shuffle idx (Fisher-Yates, counter-based draws keyed by seed/pass/rank). */
void data_shuffle(size_t *idx, size_t n, uint64_t seed, long pass, int rank);

/* Normalised features and labels of samples idx[0..n) (train set) into x
 * (n x dim) and y. */
void data_gather(const struct dataset *d, const size_t *idx, size_t n,
                 float *x, uint8_t *y);
/* Test samples [first, first + n) into x and y. */
void data_gather_test(const struct dataset *d, size_t first, size_t n,
                      float *x, uint8_t *y);

#endif
