/* mvrt: portable runtime for the Mamba selective scan and MambaVision.
 * The only header a user needs. */
#ifndef MVRT_MVRT_H
#define MVRT_MVRT_H

#include "mvrt/core.h"
#include "mvrt/backend.h"
#include "mvrt/memory.h"
#include "mvrt/tensor.h"
#include "mvrt/selective_scan.h"
#include "mvrt/safetensors.h"
#include "mvrt/model.h"
#include "mvrt/preprocess.h"
#include "mvrt/debug.h"

#endif
