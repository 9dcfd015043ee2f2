/* par.h - when a loop is worth an OpenMP fork/join (internal to core).
 *
 * The one home of the serial/parallel floor.  It has two values on
 * purpose, each kept as it was measured, because a floor decides how a
 * sum is cut and so the last bits of results that tests and recorded
 * runs pin:
 *
 *   LBS_PAR_MIN_OPTIM     optimizer passes (core/optim, the chunked
 *                         kernels of core/kern): several streams per
 *                         element and norms whose chunking must not
 *                         change, so the fork pays off only later.
 *   LBS_PAR_MIN_COMPRESS  compressor passes (core/compress): one or two
 *                         streams (gather, scatter, casts, scans) on
 *                         layers that are often small.
 *
 * Each implementation header (optim_impl.h, compress_impl.h) defines
 * LBS_PAR_MIN as its floor, so a file uses one floor and never both; no
 * core file includes both headers.
 */
#ifndef LBS_PAR_H
#define LBS_PAR_H

#define LBS_PAR_MIN_OPTIM 65536
#define LBS_PAR_MIN_COMPRESS 32768

#endif
