"""The op library as built: its dynamic dependencies, its RPATH, and the
kernels it registers (CPU for float16/bfloat16/float32/float64, GPU for
float16/bfloat16/float32 — the GPU ones are compiled and registered with any
TensorFlow wheel but only run under a GPU build of TensorFlow).

Two layouts: bundled (pip install ./tf_plugin, or the whole tree's build:
libmvrt and the plugins next to the op library, RPATH $ORIGIN) and against
an installed mvrt (MVRT_PREFIX=... pip install ./tf_plugin: libmvrt and the
plugins stay in the prefix's libdir, which the RPATH names)."""
import os
import shutil
import subprocess

import pytest
from tensorflow.python.framework import kernels

import mvrt_tf


def _mvrt_libdir():
    """Where libmvrt and the backend plugins are: the installed prefix's
    libdir (a wheel built against a prefix records it; a standalone build
    tree passes it as MVRT_TF_MVRT_LIBDIR), else next to the op library."""
    try:
        from mvrt_tf import _build_info
        if getattr(_build_info, "MVRT_LIBDIR", None):
            return _build_info.MVRT_LIBDIR
    except ImportError:
        pass
    return os.environ.get("MVRT_TF_MVRT_LIBDIR") or os.path.dirname(mvrt_tf.library_path)


def _dynamic_section(path):
    if not shutil.which("readelf"):
        pytest.skip("readelf not installed")
    return subprocess.run(["readelf", "-d", path], capture_output=True, text=True,
                          check=True).stdout


def test_needed_entries_and_rpath():
    dyn = _dynamic_section(mvrt_tf.library_path)
    needed = [line.split("[")[1].rstrip("]") for line in dyn.splitlines() if "(NEEDED)" in line]
    assert "libtensorflow_framework.so.2" in needed, needed
    assert any(n.startswith("libmvrt.so") for n in needed), needed
    # the CUDA runtime and the backend plugins are never linked: plugins are
    # loaded at run time by libmvrt
    assert not any("cuda" in n or "backend" in n or "python" in n for n in needed), needed
    libdir = _mvrt_libdir()
    if libdir == os.path.dirname(mvrt_tf.library_path):
        assert "$ORIGIN" in dyn  # libmvrt is found next to the op library
    else:
        runpath = [line for line in dyn.splitlines() if "RUNPATH" in line or "RPATH" in line]
        assert any(libdir in line for line in runpath), (libdir, runpath)
    # the libmvrt the op library resolves is that one (not another install)
    assert os.path.exists(os.path.join(libdir, next(n for n in needed
                                                    if n.startswith("libmvrt.so"))))


def test_backend_plugin_next_to_libmvrt():
    assert os.path.exists(os.path.join(_mvrt_libdir(), "libmvrt_backend_cpu.so"))


def test_registered_kernels():
    for op in ("MambaSelectiveScan", "MambaSelectiveScanGrad"):
        regs = kernels.get_registered_kernels_for_op(op).kernel
        by_device = {}
        for k in regs:
            types = [c.allowed_values.list.type[0] for c in k.constraint if c.name == "T"]
            by_device.setdefault(k.device_type, set()).update(types)
        # DataType enum: 1 float, 2 double, 14 bfloat16, 19 half
        assert by_device.get("CPU") == {1, 2, 14, 19}, by_device
        assert by_device.get("GPU") == {1, 14, 19}, by_device
