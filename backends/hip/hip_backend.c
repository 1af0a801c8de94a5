/* The HIP backend plugin (libmvrt_backend_hip.so) for AMD GPUs (MI200
 * gfx90a, MI300X gfx942): the GPU host implementation shared with CUDA
 * (backends/gpu_common/gpu_backend_impl.h) over the HIP runtime
 * (libamdhip64). The kernels are the same sources as CUDA's, compiled by
 * clang for AMD targets with 64-wide wavefronts (ops/common/gpu_vendor.h).
 *
 * Verified here: it builds, the fat binary holds gfx90a and gfx942 code
 * objects, and with no AMD GPU the probe reports "unavailable (no AMD GPU)".
 * Its kernels have not run on AMD hardware in this project's CI. */
#define _GNU_SOURCE
#ifndef MVRT_GPU_HOST_HIP
#define MVRT_GPU_HOST_HIP 1
#endif
#include "../gpu_common/gpu_host_api.h"
#include "../gpu_common/scan_gpu_launch.h"
#include "../gpu_common/gpu_backend_impl.h"
