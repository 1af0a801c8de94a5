"""scikit-build-core metadata provider: the wheel's dependencies.

The op library is built against the C++ ABI of the TensorFlow installed in
the target environment, so the wheel must require exactly that TensorFlow
minor, under the distribution name that is installed (tensorflow,
tensorflow-cpu, ...). pip may run this inside an isolated build environment
that hides the target's site-packages through PYTHONPATH/PYTHONNOUSERSITE;
the interpreter is still the target one, so it is asked without them (the
same query tf_plugin/CMakeLists.txt makes).
"""
import os
import subprocess
import sys

_PROBE = r"""
import importlib.metadata as md
import tensorflow as tf
dist = "tensorflow"
for name in ("tensorflow", "tensorflow-cpu", "tensorflow-intel", "tensorflow-aarch64",
             "tf-nightly", "tf-nightly-cpu"):
    try:
        if md.version(name).split("+")[0] == tf.__version__.split("+")[0]:
            dist = name
            break
    except md.PackageNotFoundError:
        pass
print("MVRT_TF_DIST=%s %s" % (dist, tf.__version__))
"""


def _installed_tensorflow():
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONNOUSERSITE")}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    proc = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True,
                          text=True)
    for line in proc.stdout.splitlines():
        if line.startswith("MVRT_TF_DIST="):
            dist, version = line[len("MVRT_TF_DIST="):].split()
            return dist, version
    raise RuntimeError("mvrt-tf: TensorFlow is not importable by %s; install tensorflow or "
                       "tensorflow-cpu first (the op library is built against it):\n%s"
                       % (sys.executable, proc.stderr[-2000:]))


def dynamic_metadata(field, settings=None, project=None):
    if field != "dependencies":
        raise RuntimeError("mvrt_tf_build_meta only provides 'dependencies'")
    dist, version = _installed_tensorflow()
    minor = ".".join(version.split(".")[:2])
    return ["%s==%s.*" % (dist, minor), "numpy"]
