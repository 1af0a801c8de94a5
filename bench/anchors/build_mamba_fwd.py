# mamba's selective_scan extension, forward kernels only (+ a throwing backward), into /tmp/ssext.
import os, sys, time, torch
cc = "%d.%d" % torch.cuda.get_device_capability()
os.environ.setdefault("TORCH_CUDA_ARCH_LIST", cc); os.environ.setdefault("MAX_JOBS", "6")
from torch.utils.cpp_extension import load
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))); src = os.path.join(root, ".anchor", "csrc", "selective_scan")
files = [os.path.join(src, "selective_scan.cpp")] + [os.path.join(src, f) for f in sorted(os.listdir(src)) if f.startswith("selective_scan_fwd") and f.endswith(".cu")]
files.append(os.path.join(root, "bench", "anchors", "mamba_bwd_stub.cu"))
flags = ["-O3", "-std=c++17", "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__", "-U__CUDA_NO_BFLOAT16_OPERATORS__",
         "-U__CUDA_NO_BFLOAT16_CONVERSIONS__", "-U__CUDA_NO_BFLOAT162_OPERATORS__", "-U__CUDA_NO_BFLOAT162_CONVERSIONS__",
         "--expt-relaxed-constexpr", "--expt-extended-lambda", "--use_fast_math", "-lineinfo", "--threads", "2"]
os.makedirs("/tmp/ssext", exist_ok=True); t = time.time()
ext = load(name="selective_scan_cuda", sources=files, extra_cflags=["-O3", "-std=c++17"], extra_cuda_cflags=flags,
           extra_include_paths=[src], build_directory="/tmp/ssext", verbose=False)
print("mamba selective_scan extension (forward) built in %.0f s: %s" % (time.time() - t, ext.__file__), flush=True)
