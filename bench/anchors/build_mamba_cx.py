# mamba's selective_scan extension with only what scan_mamba_complex.py calls (the f32 forward and
# the f32 complex backward; the rest throws: mamba_stub_cx.cu), into /tmp/ssext: the whole
# extension's slowest files are left out, so a short device lease can time complex A.
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mamba_build import SRC, HERE, build
files = [os.path.join(SRC, f) for f in ("selective_scan.cpp", "selective_scan_fwd_fp32.cu", "selective_scan_bwd_fp32_complex.cu")]
build(files + [os.path.join(HERE, "mamba_stub_cx.cu")], "f32 forward, complex f32 backward", jobs=4, nvcc_threads=4)
