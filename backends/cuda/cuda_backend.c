/* The CUDA backend plugin (libmvrt_backend_cuda.so): the GPU host
 * implementation shared with HIP (backends/gpu_common/gpu_backend_impl.h)
 * over the CUDA runtime, which is linked statically so that the module needs
 * only the NVIDIA driver. The kernels are behind scan_cuda.h. */
#define _GNU_SOURCE
#define MVRT_GPU_HOST_CUDA 1
#include "../gpu_common/gpu_host_api.h"
#include "scan_cuda.h"

/* The kernel interface under the names the shared implementation uses. */
#define mvrt_gpu_scan_tuning_t mvrt_cuda_scan_tuning_t
#define mvrt_gpu_scan_fwd mvrt_cuda_scan_fwd
#define mvrt_gpu_scan_bwd_workspace mvrt_cuda_scan_bwd_workspace
#define mvrt_gpu_scan_bwd mvrt_cuda_scan_bwd
#define mvrt_gpu_fill_pattern mvrt_cuda_fill_pattern

#include "../gpu_common/gpu_backend_impl.h"
