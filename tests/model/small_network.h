/* A small MambaVision network with every part (stem, two ConvBlock
 * levels, two hybrid levels with mixers then attention, downsampling, head)
 * for the model and tool tests. */
#ifndef MVRT_TESTS_MODEL_SMALL_NETWORK_H
#define MVRT_TESTS_MODEL_SMALL_NETWORK_H

#include <string.h>

#include "mvrt/mvrt.h"

static inline mvrt_model_config_t small_network(void)
{
    mvrt_model_config_t c;
    memset(&c, 0, sizeof c);
    c.kind = MVRT_MODEL_NETWORK;
    c.dim = 16, c.in_dim = 8, c.in_chans = 3, c.num_classes = 7;
    c.mlp_ratio = 2, c.qkv_bias = 1, c.d_state = 8, c.d_conv = 3;
    int depths[4] = {1, 1, 3, 2}, heads[4] = {1, 2, 2, 4}, windows[4] = {4, 4, 3, 2};
    memcpy(c.depths, depths, sizeof depths);
    memcpy(c.heads, heads, sizeof heads);
    memcpy(c.windows, windows, sizeof windows);
    return c;
}

#endif
