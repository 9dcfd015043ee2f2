/* lbscale/topology.h - communication graphs and mixing matrices for
 * decentralized optimizers (DmSGD, DecentLaM).
 *
 * A topology of n ranks is a sequence of mixing matrices W_k (one for a
 * static graph, `period` of them for a time-varying one); optimizer step t
 * (1-based) uses phase k = (t - 1) mod period.  Rank i mixes what it
 * receives as x_i <- sum_j W[i][j] x_j: row i holds the weights rank i
 * applies, W[i][j] > 0 for j != i means "j sends to i".
 *
 * Every graph here is circulant - rank i sends to i + o (mod n) and
 * receives from i - o for each offset o of the phase - so neighbour lists
 * are generated on demand and memory stays O(n) even for "full":
 *
 *   ring         offsets +1, -1; weight 1/3 each, self 1/3
 *   exponential  static exponential graph: offsets 2^0, 2^1, ... 2^(tau-1)
 *                with tau = ceil(log2 n) (every power of two below n);
 *                uniform weights 1/(tau + 1), self included.  Directed:
 *                the out-neighbours i + 2^t differ from the in-neighbours
 *                i - 2^t.
 *   onepeer      one-peer exponential graph (time-varying): phase k has the
 *                single offset 2^k, k = 0 .. tau-1 (period tau); weights
 *                1/2 self, 1/2 peer.
 *   full         every other rank, weights 1/n.
 *
 * Small n: offsets are taken mod n and coinciding ones merge their
 * weights, so a 2-rank ring is [[1/3, 2/3], [2/3, 1/3]] and a 3-rank ring
 * is "full"; n = 1 is W = [1] with no neighbours for every kind.
 *
 * n not a power of two: exponential and onepeer still use the powers of two
 * below n, so every W_k stays doubly stochastic and the graph (for onepeer:
 * the union over one period) stays connected.  What is lost is onepeer's
 * exact averaging: for n = 2^tau the product of the tau matrices of one
 * period is exactly (1/n) 1 1^T (consensus after tau steps with no
 * gradient); for other n it is not, and consensus is reached only
 * geometrically, over many periods.
 *
 * Validation: lbs_topology_new checks every phase it builds - entries >= 0,
 * every row and column sum 1 within 1e-12, every in-neighbour list matched
 * by the sender's out-neighbour list - and that the union of the phases is
 * connected (for doubly stochastic matrices weak connectivity implies
 * strong: by Birkhoff's theorem every edge lies on a cycle).  Failures are
 * -EINVAL (they would be a bug here; lbs_mixing_validate applies the same
 * test to any dense matrix a caller builds).
 *
 * Ownership: lbs_topology_new allocates, lbs_topology_free releases.
 * Arrays passed to lbs_topology_peers / lbs_topology_matrix are the
 * caller's.  Threading: a topology is read-only after creation.
 */
#ifndef LBSCALE_TOPOLOGY_H
#define LBSCALE_TOPOLOGY_H

#include <stddef.h>

#include "lbscale/error.h"

#ifdef __cplusplus
extern "C" {
#endif

enum lbs_topo {
    LBS_TOPO_RING,
    LBS_TOPO_EXPONENTIAL,
    LBS_TOPO_ONEPEER,
    LBS_TOPO_FULL,
    LBS_TOPO_SYMEXP,    /* symmetric exponential: offsets +-2^k, k < ceil(log2 n) */
    LBS_TOPO_COUNT
};

/* "ring", "exponential", "onepeer", "full", "symexp", NULL - in enum order, usable
 * as the choices of an LBS_P_ENUM spec key. */
extern const char *const lbs_topo_names[];

/* The graphs themselves, without building a topology (the simulator
 * prices neighbour exchanges at any n from these): the offsets o of the
 * phase optimizer step `step` uses, rank i sending to i + o and receiving
 * from i - o (mod n), as the graph defines them before they are reduced
 * mod n and merged -
 *   ring +1, -1; exponential 2^0 .. 2^(tau-1); onepeer 2^k for phase k;
 *   symexp 2^k and n - 2^k for k < tau, each distinct value once;
 *   full 1 .. n-1 -
 * each weighted 1/(count + 1), as is self.  Writes the first cap of them
 * to off (off may be NULL when cap is 0) and returns how many the phase
 * has.  n >= 1 (up to 2^62; full: up to INT_MAX, its count); step as
 * for lbs_topology_phase. */
int lbs_topo_offsets(enum lbs_topo kind, long n, long step, long *off,
                     int cap);

struct lbs_topology;

/* A validated topology of n >= 1 ranks (n <= 2^24). */
int lbs_topology_new(enum lbs_topo kind, int n, struct lbs_topology **out,
                     struct lbs_err *err);
/* By name; -ENOENT naming the choices for an unknown one. */
int lbs_topology_new_name(const char *name, int n, struct lbs_topology **out,
                          struct lbs_err *err);
void lbs_topology_free(struct lbs_topology *t);

enum lbs_topo lbs_topology_kind(const struct lbs_topology *t);
int lbs_topology_size(const struct lbs_topology *t);
/* Number of distinct phases (1 for static graphs). */
int lbs_topology_period(const struct lbs_topology *t);
/* Largest in-degree (= out-degree) over the phases, self excluded: the
 * array length lbs_topology_peers needs. */
int lbs_topology_degree(const struct lbs_topology *t);
/* The phase optimizer step `step` (1-based) uses. */
int lbs_topology_phase(const struct lbs_topology *t, long step);

/* Rank `rank`'s neighbourhood at step `step`: from[0..nfrom) ascending
 * with weights w[] = W[rank][from[]], wself = W[rank][rank], and
 * to[0..nto) ascending.  from, w, to: caller arrays of
 * lbs_topology_degree() entries (NULL allowed when that is 0). */
struct lbs_topo_peers {
    int nfrom, nto;
    int *from;
    double *w;
    int *to;
    double wself;
};
void lbs_topology_peers(const struct lbs_topology *t, int rank, long step,
                        struct lbs_topo_peers *p);

/* The dense n x n matrix of step `step`, row-major (W[i*n + j]). */
void lbs_topology_matrix(const struct lbs_topology *t, long step, double *W);

/* Check nphases dense n x n matrices stored one after the other: each
 * nonnegative with row and column sums 1 (within tol), and their union
 * connected.  0 or -EINVAL naming the first violation. */
int lbs_mixing_validate(const double *W, int nphases, int n, double tol,
                        struct lbs_err *err);

#ifdef __cplusplus
}
#endif
#endif
