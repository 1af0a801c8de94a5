/* The CUDA backend plugin (libmvrt_backend_cuda.so): the GPU host
 * implementation shared with HIP (backends/gpu_common/gpu_backend_impl.h)
 * over the CUDA runtime, which is linked statically so that the module needs
 * only the NVIDIA driver. The kernels are behind scan_gpu_launch.h. */
#define _GNU_SOURCE
#ifndef MVRT_GPU_HOST_CUDA
#define MVRT_GPU_HOST_CUDA 1
#endif
#include "../gpu_common/gpu_host_api.h"
#include "../gpu_common/scan_gpu_launch.h"
#include "../gpu_common/gpu_backend_impl.h"
