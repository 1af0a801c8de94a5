# Shared by build_mamba_fwd.py and build_mamba_cx.py: builds mamba's selective_scan extension from
# the given sources (.anchor/csrc/selective_scan's and this folder's stubs) for the local GPU into
# /tmp/ssext, with the flags of shared/anchors/build_mamba_ext.py.
import os, time, torch
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(ROOT, ".anchor", "csrc", "selective_scan")
HERE = os.path.join(ROOT, "bench", "anchors")

def build(files, label, jobs, nvcc_threads):
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "%d.%d" % torch.cuda.get_device_capability())
    os.environ.setdefault("MAX_JOBS", str(jobs))
    from torch.utils.cpp_extension import load
    flags = ["-O3", "-std=c++17", "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__",
             "-U__CUDA_NO_BFLOAT16_OPERATORS__", "-U__CUDA_NO_BFLOAT16_CONVERSIONS__", "-U__CUDA_NO_BFLOAT162_OPERATORS__",
             "-U__CUDA_NO_BFLOAT162_CONVERSIONS__", "--expt-relaxed-constexpr", "--expt-extended-lambda", "--use_fast_math",
             "-lineinfo", "--threads", str(nvcc_threads)]
    os.makedirs("/tmp/ssext", exist_ok=True); t = time.time()
    ext = load(name="selective_scan_cuda", sources=files, extra_cflags=["-O3", "-std=c++17"], extra_cuda_cflags=flags,
               extra_include_paths=[SRC], build_directory="/tmp/ssext", verbose=False)
    print("mamba selective_scan extension (%s) built in %.0f s: %s" % (label, time.time() - t, ext.__file__), flush=True)
