# mamba's selective_scan extension, forward kernels only (+ a throwing backward), into /tmp/ssext.
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mamba_build import SRC, HERE, build
files = [os.path.join(SRC, "selective_scan.cpp")] + [os.path.join(SRC, f) for f in sorted(os.listdir(SRC))
                                                     if f.startswith("selective_scan_fwd") and f.endswith(".cu")]
build(files + [os.path.join(HERE, "mamba_bwd_stub.cu")], "forward", jobs=6, nvcc_threads=2)
