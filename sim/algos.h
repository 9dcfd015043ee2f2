/* algos.h - the simulator's collective algorithms: one row each.
 *
 * X(ID, name, collective, cost, nccl, nccl_as, needs):
 *   ID          the enum value: LBS_SIM_<ID> (lbscale_sim.h)
 *   name        as platform files, --timeline and `sim coll` spell it
 *   collective  the core collective it implements (allgather algorithms
 *               serve allgatherv and a "full" neighbour graph too)
 *   cost        its alpha-beta formula in coll.c (NULL: none)
 *   nccl        its cost under NCCL's tuner model in nccl.c (NULL: NCCL
 *               does not run it)
 *   nccl_as     the NCCL algorithm a GPU platform's nccl.algorithms
 *               enables it by ("ring", "tree", "nvls"); NULL where NCCL
 *               runs it always (point-to-point sends, the barrier) or
 *               never (nccl NULL)
 *   needs       where the alpha-beta formula applies: NEED_NODES (two or
 *               more nodes), NEED_POW2 (P and GPUs per node powers of two)
 *
 * Adding an algorithm is one row here and its cost function in coll.c
 * (and nccl.c and nccl_as for the NCCL model); coll.c states each formula and its
 * source.  The rows' order is the enum's. */
#ifndef LBS_SIM_ALGOS_H
#define LBS_SIM_ALGOS_H

#define LBS_SIM_ALGOS(X)                                                     \
    /* allreduce: flat ring over all P */                                    \
    X(AR_RING, "ring", LBS_COLL_ALLREDUCE, ar_ring,                          \
      lbs_sim_nccl_allreduce, "ring", 0)                                     \
    /* allreduce: NCCL double binary tree */                                 \
    X(AR_TREE, "tree", LBS_COLL_ALLREDUCE, ar_tree,                          \
      lbs_sim_nccl_allreduce, "tree", 0)                                     \
    /* allreduce: recursive halving-doubling */                              \
    X(AR_RHD, "rhd", LBS_COLL_ALLREDUCE, ar_rhd,                             \
      NULL, NULL, 0)                                                         \
    /* allreduce: 2-level, intra ring + inter ring */                        \
    X(AR_HIER, "hier", LBS_COLL_ALLREDUCE, ar_hier,                          \
      NULL, NULL, NEED_NODES)                                                \
    /* allgather(v): ring */                                                 \
    X(AG_RING, "allgather-ring", LBS_COLL_ALLGATHER, ag_ring,                \
      lbs_sim_nccl_allgather, "ring", 0)                                     \
    /* allgather(v): recursive doubling */                                   \
    X(AG_RD, "allgather-rd", LBS_COLL_ALLGATHER, ag_rd,                      \
      NULL, NULL, NEED_POW2)                                                 \
    /* allgather(v): Bruck */                                                \
    X(AG_BRUCK, "allgather-bruck", LBS_COLL_ALLGATHER, ag_bruck,             \
      NULL, NULL, 0)                                                         \
    /* alltoall: pairwise exchange */                                        \
    X(A2A_PAIRWISE, "alltoall-pairwise", LBS_COLL_ALLTOALL, a2a_pairwise,    \
      lbs_sim_nccl_alltoall, NULL, 0)                                        \
    /* alltoall: Bruck (log P rounds) */                                     \
    X(A2A_BRUCK, "alltoall-bruck", LBS_COLL_ALLTOALL, a2a_bruck,             \
      NULL, NULL, 0)                                                         \
    /* bcast: pipelined chain (NCCL ring) */                                 \
    X(BC_PIPELINE, "bcast-pipeline", LBS_COLL_BCAST, bc_pipeline,            \
      lbs_sim_nccl_bcast, "ring", 0)                                         \
    /* bcast: binomial tree */                                               \
    X(BC_BINOMIAL, "bcast-binomial", LBS_COLL_BCAST, bc_binomial,            \
      NULL, NULL, 0)                                                         \
    /* barrier: dissemination */                                             \
    X(BAR_DISSEM, "barrier-dissemination", LBS_COLL_BARRIER, bar_dissem,     \
      lbs_sim_nccl_barrier, NULL, 0)                                         \
    /* neighbour exchange: direct sends */                                   \
    X(NB_DIRECT, "neighbor-direct", LBS_COLL_NEIGHBOR, nb_direct,            \
      lbs_sim_nccl_neighbor, NULL, 0)                                        \
    /* allreduce: NVLink SHARP (NCCL, Hopper): no alpha-beta formula */      \
    X(AR_NVLS, "nvls", LBS_COLL_ALLREDUCE, NULL,                             \
      lbs_sim_nccl_allreduce, "nvls", 0)                                     \
    /* allreduce across nodes: NVLS inside, a tree between (NCCL 2.21) */    \
    X(AR_NVLS_TREE, "nvls-tree", LBS_COLL_ALLREDUCE, NULL,                   \
      lbs_sim_nccl_allreduce, "nvls", NEED_NODES)                            \
    /* allgather inside one node by NVLink multicast (NCCL 2.21, Hopper) */  \
    X(AG_NVLS, "allgather-nvls", LBS_COLL_ALLGATHER, NULL,                   \
      lbs_sim_nccl_allgather, "nvls", 0)

#endif
