/* Maps the neutral gpu* names used by gpu_backend_impl.h to one vendor's
 * runtime API. A backend source defines MVRT_GPU_HOST_CUDA or
 * MVRT_GPU_HOST_HIP, then includes this header and the implementation.
 * Only names present in CUDA 12/13 and in HIP 5.2 through ROCm 7 are used
 * (see shared/notes/hip-toolchain.md). */
#ifndef MVRT_BACKENDS_GPU_HOST_API_H
#define MVRT_BACKENDS_GPU_HOST_API_H

#include <stdio.h>

#if defined(MVRT_GPU_HOST_CUDA)

#include <cuda_runtime_api.h>

#define MVRT_GPU_NAME "cuda"
#define MVRT_GPU_VENDOR "NVIDIA"
#define MVRT_GPU_PRIORITY 30
#define MVRT_GPU_API_PREFIX "cuda"
#define MVRT_GPU_NO_DEVICE_TEXT "no usable NVIDIA driver or GPU"
#define MVRT_GPU_TPR_ENV "MVRT_CUDA_SCAN_TPR"
#define MVRT_GPU_ENV_PREFIX "MVRT_CUDA_"
/* Errors meaning "no usable driver or device" rather than a failed call. */
#define MVRT_GPU_UNAVAILABLE_ERROR_CASES                                      \
    case cudaErrorNoDevice:                                                   \
    case cudaErrorInsufficientDriver:                                         \
    case cudaErrorDevicesUnavailable:                                         \
    case cudaErrorCompatNotSupportedOnDevice:                                 \
    case cudaErrorSystemDriverMismatch:                                       \
    case cudaErrorInitializationError:                                        \
    case cudaErrorNoKernelImageForDevice:

typedef struct cudaDeviceProp gpuDeviceProp_t;
typedef struct cudaMemPoolProps gpuMemPoolProps;
typedef enum cudaStreamCaptureStatus gpuStreamCaptureStatus;
typedef enum cudaMemcpyKind gpuMemcpyKind;
#define gpuDevAttrMaxSharedMemoryPerBlockOptin cudaDevAttrMaxSharedMemoryPerBlockOptin
#define gpuDevAttrMultiProcessorCount cudaDevAttrMultiProcessorCount
#define gpuGraphInstantiateSimple(exec, graph) cudaGraphInstantiate((exec), (graph), 0)
#define gpuDeviceGetAttribute cudaDeviceGetAttribute
#define gpuErrorInvalidConfiguration cudaErrorInvalidConfiguration
#define gpuErrorInvalidValue cudaErrorInvalidValue
#define gpuGetDevice cudaGetDevice
#define gpuMemsetAsync cudaMemsetAsync
#define gpuErrorInsufficientDriver cudaErrorInsufficientDriver
#define gpuErrorMemoryAllocation cudaErrorMemoryAllocation
#define gpuErrorNoDevice cudaErrorNoDevice
#define gpuError_t cudaError_t
#define gpuEventCreateWithFlags cudaEventCreateWithFlags
#define gpuEventDefault cudaEventDefault
#define gpuEventDestroy cudaEventDestroy
#define gpuEventDisableTiming cudaEventDisableTiming
#define gpuEventElapsedTime cudaEventElapsedTime
#define gpuEventRecord cudaEventRecord
#define gpuEventSynchronize cudaEventSynchronize
#define gpuEvent_t cudaEvent_t
#define gpuFreeAsync cudaFreeAsync
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuGetDeviceProperties cudaGetDeviceProperties
#define gpuGetErrorName cudaGetErrorName
#define gpuGetErrorString cudaGetErrorString
#define gpuGetLastError cudaGetLastError
#define gpuGraphDestroy cudaGraphDestroy
#define gpuGraphExecDestroy cudaGraphExecDestroy
#define gpuGraphExec_t cudaGraphExec_t
#define gpuGraphLaunch cudaGraphLaunch
#define gpuGraph_t cudaGraph_t
#define gpuMallocFromPoolAsync cudaMallocFromPoolAsync
#define gpuMemAllocationTypePinned cudaMemAllocationTypePinned
#define gpuMemHandleTypeNone cudaMemHandleTypeNone
#define gpuMemLocationTypeDevice cudaMemLocationTypeDevice
#define gpuMemPoolAttrReleaseThreshold cudaMemPoolAttrReleaseThreshold
#define gpuMemPoolCreate cudaMemPoolCreate
#define gpuMemPoolDestroy cudaMemPoolDestroy
#define gpuMemPoolSetAttribute cudaMemPoolSetAttribute
#define gpuMemPoolTrimTo cudaMemPoolTrimTo
#define gpuMemPool_t cudaMemPool_t
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define gpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define gpuMemcpyHostToDevice cudaMemcpyHostToDevice
#define gpuSetDevice cudaSetDevice
#define gpuStreamBeginCapture cudaStreamBeginCapture
#define gpuStreamCaptureModeThreadLocal cudaStreamCaptureModeThreadLocal
#define gpuStreamCaptureStatusNone cudaStreamCaptureStatusNone
#define gpuStreamCreateWithFlags cudaStreamCreateWithFlags
#define gpuStreamDestroy cudaStreamDestroy
#define gpuStreamEndCapture cudaStreamEndCapture
#define gpuStreamIsCapturing cudaStreamIsCapturing
#define gpuStreamNonBlocking cudaStreamNonBlocking
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuStreamWaitEvent cudaStreamWaitEvent
#define gpuStream_t cudaStream_t
#define gpuSuccess cudaSuccess

static inline void mvrt_gpu_arch_string(const gpuDeviceProp_t *prop, char *buf, size_t n)
{
    snprintf(buf, n, "sm_%d%d", prop->major, prop->minor);
}

#elif defined(MVRT_GPU_HOST_HIP)

#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
#include <hip/hip_runtime_api.h>

#define MVRT_GPU_NAME "hip"
#define MVRT_GPU_VENDOR "AMD"
#define MVRT_GPU_PRIORITY 20
#define MVRT_GPU_API_PREFIX "hip"
#define MVRT_GPU_NO_DEVICE_TEXT "no AMD GPU"
#define MVRT_GPU_TPR_ENV "MVRT_HIP_SCAN_TPR"
#define MVRT_GPU_ENV_PREFIX "MVRT_HIP_"
#define MVRT_GPU_UNAVAILABLE_ERROR_CASES                                      \
    case hipErrorNoDevice:                                                    \
    case hipErrorInsufficientDriver:                                          \
    case hipErrorNotInitialized:                                              \
    case hipErrorInvalidDevice:                                               \
    case hipErrorNoBinaryForGpu:

typedef hipDeviceProp_t gpuDeviceProp_t;
typedef hipMemPoolProps gpuMemPoolProps;
typedef hipStreamCaptureStatus gpuStreamCaptureStatus;
typedef hipMemcpyKind gpuMemcpyKind;
#define gpuDevAttrMaxSharedMemoryPerBlockOptin hipDeviceAttributeSharedMemPerBlockOptin
#define gpuDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
/* HIP 5.2 has only the 5-argument form (error node and log buffer). */
#define gpuGraphInstantiateSimple(exec, graph) hipGraphInstantiate((exec), (graph), NULL, NULL, 0)
#define gpuDeviceGetAttribute hipDeviceGetAttribute
#define gpuErrorInvalidConfiguration hipErrorInvalidConfiguration
#define gpuErrorInvalidValue hipErrorInvalidValue
#define gpuGetDevice hipGetDevice
#define gpuMemsetAsync hipMemsetAsync
#define gpuErrorInsufficientDriver hipErrorInsufficientDriver
#define gpuErrorMemoryAllocation hipErrorMemoryAllocation
#define gpuErrorNoDevice hipErrorNoDevice
#define gpuError_t hipError_t
#define gpuEventCreateWithFlags hipEventCreateWithFlags
#define gpuEventDefault hipEventDefault
#define gpuEventDestroy hipEventDestroy
#define gpuEventDisableTiming hipEventDisableTiming
#define gpuEventElapsedTime hipEventElapsedTime
#define gpuEventRecord hipEventRecord
#define gpuEventSynchronize hipEventSynchronize
#define gpuEvent_t hipEvent_t
#define gpuFreeAsync hipFreeAsync
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuGetDeviceProperties hipGetDeviceProperties
#define gpuGetErrorName hipGetErrorName
#define gpuGetErrorString hipGetErrorString
#define gpuGetLastError hipGetLastError
#define gpuGraphDestroy hipGraphDestroy
#define gpuGraphExecDestroy hipGraphExecDestroy
#define gpuGraphExec_t hipGraphExec_t
#define gpuGraphLaunch hipGraphLaunch
#define gpuGraph_t hipGraph_t
#define gpuMallocFromPoolAsync hipMallocFromPoolAsync
#define gpuMemAllocationTypePinned hipMemAllocationTypePinned
#define gpuMemHandleTypeNone hipMemHandleTypeNone
#define gpuMemLocationTypeDevice hipMemLocationTypeDevice
#define gpuMemPoolAttrReleaseThreshold hipMemPoolAttrReleaseThreshold
#define gpuMemPoolCreate hipMemPoolCreate
#define gpuMemPoolDestroy hipMemPoolDestroy
#define gpuMemPoolSetAttribute hipMemPoolSetAttribute
#define gpuMemPoolTrimTo hipMemPoolTrimTo
#define gpuMemPool_t hipMemPool_t
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define gpuMemcpyDeviceToHost hipMemcpyDeviceToHost
#define gpuMemcpyHostToDevice hipMemcpyHostToDevice
#define gpuSetDevice hipSetDevice
#define gpuStreamBeginCapture hipStreamBeginCapture
#define gpuStreamCaptureModeThreadLocal hipStreamCaptureModeThreadLocal
#define gpuStreamCaptureStatusNone hipStreamCaptureStatusNone
#define gpuStreamCreateWithFlags hipStreamCreateWithFlags
#define gpuStreamDestroy hipStreamDestroy
#define gpuStreamEndCapture hipStreamEndCapture
#define gpuStreamIsCapturing hipStreamIsCapturing
#define gpuStreamNonBlocking hipStreamNonBlocking
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuStreamWaitEvent hipStreamWaitEvent
#define gpuStream_t hipStream_t
#define gpuSuccess hipSuccess

static inline void mvrt_gpu_arch_string(const gpuDeviceProp_t *prop, char *buf, size_t n)
{
    snprintf(buf, n, "%s", prop->gcnArchName);
}

#else
#error "define MVRT_GPU_HOST_CUDA or MVRT_GPU_HOST_HIP before including gpu_host_api.h"
#endif

#endif
