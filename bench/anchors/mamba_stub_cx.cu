// For a complex-A-only build of mamba's extension (build_mamba_cx.py): every instantiation but the
// f32 forward (its file is built) and the f32 complex backward throws.
#include <stdexcept>
#include <c10/util/complex.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include "selective_scan.h"
template <typename input_t, typename weight_t> void selective_scan_fwd_cuda(SSMParamsBase &, cudaStream_t)
{ throw std::runtime_error("forward not built (complex-A-only build)"); }
template <typename input_t, typename weight_t> void selective_scan_bwd_cuda(SSMParamsBwd &, cudaStream_t)
{ throw std::runtime_error("backward not built (complex-A-only build)"); }
template void selective_scan_fwd_cuda<at::Half, float>(SSMParamsBase &, cudaStream_t);
template void selective_scan_fwd_cuda<at::Half, c10::complex<float>>(SSMParamsBase &, cudaStream_t);
template void selective_scan_fwd_cuda<at::BFloat16, float>(SSMParamsBase &, cudaStream_t);
template void selective_scan_fwd_cuda<at::BFloat16, c10::complex<float>>(SSMParamsBase &, cudaStream_t);
template void selective_scan_bwd_cuda<float, float>(SSMParamsBwd &, cudaStream_t);
template void selective_scan_bwd_cuda<at::Half, float>(SSMParamsBwd &, cudaStream_t);
template void selective_scan_bwd_cuda<at::Half, c10::complex<float>>(SSMParamsBwd &, cudaStream_t);
template void selective_scan_bwd_cuda<at::BFloat16, float>(SSMParamsBwd &, cudaStream_t);
template void selective_scan_bwd_cuda<at::BFloat16, c10::complex<float>>(SSMParamsBwd &, cudaStream_t);
