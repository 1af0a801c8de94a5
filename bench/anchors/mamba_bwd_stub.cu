// Forward-only build of mamba's extension for inference timing: the backward entry throws.
#include <stdexcept>
#include <c10/util/complex.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include "selective_scan.h"
template <typename input_t, typename weight_t> void selective_scan_bwd_cuda(SSMParamsBwd &, cudaStream_t)
{ throw std::runtime_error("backward not built"); }
template void selective_scan_bwd_cuda<float, float>(SSMParamsBwd &, cudaStream_t);
template void selective_scan_bwd_cuda<float, c10::complex<float>>(SSMParamsBwd &, cudaStream_t);
template void selective_scan_bwd_cuda<at::Half, float>(SSMParamsBwd &, cudaStream_t);
template void selective_scan_bwd_cuda<at::Half, c10::complex<float>>(SSMParamsBwd &, cudaStream_t);
template void selective_scan_bwd_cuda<at::BFloat16, float>(SSMParamsBwd &, cudaStream_t);
template void selective_scan_bwd_cuda<at::BFloat16, c10::complex<float>>(SSMParamsBwd &, cudaStream_t);
