/* lbscale/lbscale.h - the public API in one include.
 * Link with `pkg-config --cflags --libs lbscale`. */
#ifndef LBSCALE_H
#define LBSCALE_H

#include "lbscale/comm.h"
#include "lbscale/compress.h"
#include "lbscale/error.h"
#include "lbscale/file.h"
#include "lbscale/half.h"
#include "lbscale/isa.h"
#include "lbscale/layer.h"
#include "lbscale/mask.h"
#include "lbscale/mem.h"
#include "lbscale/optim.h"
#include "lbscale/param.h"
#include "lbscale/rng.h"
#include "lbscale/topology.h"

#define LBSCALE_VERSION "0.1.0"

#endif
