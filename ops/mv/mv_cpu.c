/* Dispatcher of the MambaVision ops' CPU kernels (contract: mv_cpu.h). */
#include "ops/common/mv_cpu.h"
#include "ops/mv/mv_kernels.h"

int mvrt_cpu_op_run(const mvrt_op_params_t *p, int threads)
{
    if (threads < 1)
        threads = 1;
    switch (p->kind) {
    case MVRT_OP_LAYERNORM: mvrt_cpu_layernorm(&p->u.layernorm, threads); return 0;
    case MVRT_OP_LINEAR: mvrt_cpu_linear(&p->u.linear, threads); return 0;
    case MVRT_OP_DWCONV1D_SILU: mvrt_cpu_dwconv1d_silu(&p->u.dwconv1d, threads); return 0;
    case MVRT_OP_ATTENTION: mvrt_cpu_attention(&p->u.attention, threads); return 0;
    case MVRT_OP_CONV2D: mvrt_cpu_conv2d(&p->u.conv2d, threads); return 0;
    case MVRT_OP_WINDOW_PARTITION: mvrt_cpu_window_partition(&p->u.window, threads); return 0;
    case MVRT_OP_WINDOW_REVERSE: mvrt_cpu_window_reverse(&p->u.window, threads); return 0;
    case MVRT_OP_AFFINE_AVGPOOL: mvrt_cpu_affine_avgpool(&p->u.pool, threads); return 0;
    default: return -1;
    }
}

const char *mvrt_cpu_gemm_library(void)
{
    return mvrt_cpu_linear_library();
}
