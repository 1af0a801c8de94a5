# mamba's selective_scan extension with only what scan_mamba_complex.py calls (the f32 forward and
# the f32 complex backward; the rest throws: mamba_stub_cx.cu), into /tmp/ssext: the whole
# extension's slowest files are left out, so a short device lease can time complex A.
import os, sys, time, torch
cc = "%d.%d" % torch.cuda.get_device_capability()
os.environ.setdefault("TORCH_CUDA_ARCH_LIST", cc); os.environ.setdefault("MAX_JOBS", "4")
from torch.utils.cpp_extension import load
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))); src = os.path.join(root, ".anchor", "csrc", "selective_scan")
files = [os.path.join(src, f) for f in ("selective_scan.cpp", "selective_scan_fwd_fp32.cu", "selective_scan_bwd_fp32_complex.cu")]
files.append(os.path.join(root, "bench", "anchors", "mamba_stub_cx.cu"))
flags = ["-O3", "-std=c++17", "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__", "-U__CUDA_NO_BFLOAT16_OPERATORS__",
         "-U__CUDA_NO_BFLOAT16_CONVERSIONS__", "-U__CUDA_NO_BFLOAT162_OPERATORS__", "-U__CUDA_NO_BFLOAT162_CONVERSIONS__",
         "--expt-relaxed-constexpr", "--expt-extended-lambda", "--use_fast_math", "-lineinfo", "--threads", "4"]
os.makedirs("/tmp/ssext", exist_ok=True); t = time.time()
ext = load(name="selective_scan_cuda", sources=files, extra_cflags=["-O3", "-std=c++17"], extra_cuda_cflags=flags,
           extra_include_paths=[src], build_directory="/tmp/ssext", verbose=False)
print("mamba selective_scan extension (f32 forward, complex f32 backward) built in %.0f s: %s" % (time.time() - t, ext.__file__), flush=True)
