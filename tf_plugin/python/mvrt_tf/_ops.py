"""Loads the op library and defines selective_scan and its gradient.

The library (libmvrt_tf_ops.so) lives next to this file in an installed
package; MVRT_TF_OPS_LIBRARY overrides the path (the build tree's tests use
it). libmvrt and its backend plugins are found through the library's RPATH:
next to it ($ORIGIN) in the bundled package, or in the libdir of the
installed mvrt the package was built against (MVRT_PREFIX). No environment
variable and no preloading is needed.
"""
import glob
import os

import tensorflow as tf

_HERE = os.path.dirname(os.path.abspath(__file__))
LIBRARY_NAME = "libmvrt_tf_ops.so"


def _library_path():
    path = os.environ.get("MVRT_TF_OPS_LIBRARY")
    return path if path else os.path.join(_HERE, LIBRARY_NAME)


def _check_tf_version():
    """An op library only works with the TensorFlow minor it was built for."""
    try:
        from . import _build_info  # written into wheels at build time
    except ImportError:
        return  # build tree: CMake built it against the interpreter running the tests
    running = ".".join(tf.__version__.split(".")[:2])
    if running != _build_info.TF_MINOR:
        raise ImportError(
            "mvrt_tf was built for TensorFlow %s but TensorFlow %s is installed; "
            "reinstall mvrt_tf against this TensorFlow" % (_build_info.TF_VERSION, tf.__version__))


def _check_mvrt_libdir():
    """A package built against an installed mvrt uses that prefix's libmvrt:
    say so plainly when the prefix has gone (instead of a loader error)."""
    try:
        from . import _build_info
    except ImportError:
        return
    libdir = getattr(_build_info, "MVRT_LIBDIR", None)
    if libdir and not glob.glob(os.path.join(glob.escape(libdir), "libmvrt.so.*")):
        raise ImportError(
            "mvrt_tf was built against the mvrt installed in %s, which no longer holds "
            "libmvrt; reinstall mvrt there or rebuild mvrt_tf (MVRT_PREFIX=<prefix> "
            "pip install ./tf_plugin)" % libdir)


_check_tf_version()
_check_mvrt_libdir()
library_path = _library_path()
if not os.path.exists(library_path):
    raise ImportError("mvrt_tf: op library not found at %s (set MVRT_TF_OPS_LIBRARY or "
                      "reinstall the package)" % library_path)
_lib = tf.load_op_library(library_path)

_INPUT_DTYPES = (tf.float16, tf.bfloat16, tf.float32, tf.float64)


def _invalid(message):
    return tf.errors.InvalidArgumentError(None, None, message)


def _weight_dtype(dtype):
    return tf.float64 if dtype == tf.float64 else tf.float32


def _as_tensor(x, name, dtype_hint=None):
    # the hint only serves Python numbers/lists: anything with a dtype
    # (tensors, variables, numpy arrays) keeps it, and is checked by the caller
    if hasattr(x, "dtype"):
        dtype_hint = None
    try:
        return tf.convert_to_tensor(x, dtype_hint=dtype_hint, name=name)
    except (TypeError, ValueError) as e:
        raise _invalid("%s: cannot be converted to a tensor: %s" % (name, e)) from None


def _check_dtype(t, name, want, why):
    if t.dtype != want:
        raise _invalid("%s must be %s (%s), got %s" % (name, want.name, why, t.dtype.name))


def selective_scan(u, delta, A, B, C, D=None, z=None, delta_bias=None, delta_softplus=False,
                   return_last_state=False):
    """The Mamba selective scan with mamba_ssm's selective_scan_fn arguments.

    Shapes (batch, dim, L, N states <= 256, G groups):
      u, delta          (batch, dim, L)   float32, float16 or bfloat16 (same for both);
                                          float64 runs a slow CPU reference (for gradient checks)
      A                 (dim, N)          float32 (float64 when u is float64), or complex64
      B, C              (dim, N) float32 = constant, or (batch, N, L) / (batch, G, N, L)
                                          in u's dtype = variable; dim % G == 0
      D, delta_bias     (dim,)            float32, optional
      z                 (batch, dim, L)   u's dtype, optional
    Returns out (batch, dim, L) in u's dtype, and with return_last_state=True
    also last_state (batch, dim, N) float32: the true final state.

    A complex64 A follows mamba_ssm's selective_scan_ref with a complex A:
    constant B / C are then complex64 (dim, N), variable B / C stay float32
    with 2L steps ((re, im) of step l at 2l, 2l + 1), the state is complex,
    y = 2 Re(sum_n x C), last_state is complex64; u must be float32 and it
    runs on the CPU (the op has no GPU kernel for it). Gradients of complex
    inputs are dL/dre + i dL/dim, TensorFlow's convention.

    Gradients flow to every input. A gradient flowing into last_state is not
    supported and is ignored (as in mamba_ssm). Bad input raises
    tf.errors.InvalidArgumentError naming the input.
    """
    u = _as_tensor(u, "u", tf.float32)
    if u.dtype not in _INPUT_DTYPES:
        raise _invalid("u must be float32, float16 or bfloat16 (float64 for gradient checks on "
                       "CPU), got %s" % u.dtype.name)
    T = u.dtype
    Tw = _weight_dtype(T)
    delta = _as_tensor(delta, "delta", T)
    A = _as_tensor(A, "A", Tw)
    B = _as_tensor(B, "B", T)
    C = _as_tensor(C, "C", T)
    _check_dtype(delta, "delta", T, "the type of u")
    if A.dtype == tf.complex64:
        if T != tf.float32:
            raise tf.errors.UnimplementedError(
                None, None, "a complex64 A runs with float32 u only, got %s" % T.name)
    else:
        _check_dtype(A, "A", Tw, "the state type")
    Ta = A.dtype  # constant B / C and last_state have A's type
    for name, t in (("B", B), ("C", C)):
        if t.shape.rank == 2:
            _check_dtype(t, name, Ta, "constant (dim, N), like A")
        elif t.shape.rank is not None:
            _check_dtype(t, name, T, "variable: the type of u")
        elif t.dtype not in (T, Ta):
            raise _invalid("%s must be %s or %s, got %s" % (name, T.name, Ta.name, t.dtype.name))

    def optional(x, name, dtype):
        if x is None:
            return tf.zeros([0], dtype), False
        x = _as_tensor(x, name, dtype)
        _check_dtype(x, name, dtype, "the type of u" if dtype == T and T != Tw
                     else "the state type")
        return x, True

    D, has_D = optional(D, "D", Tw)
    z, has_z = optional(z, "z", T)
    delta_bias, has_bias = optional(delta_bias, "delta_bias", Tw)
    out, last_state = _lib.mamba_selective_scan(
        u=u, delta=delta, a=A, b=B, c=C, d=D, z=z, delta_bias=delta_bias, has_D=has_D,
        has_z=has_z, has_delta_bias=has_bias, delta_softplus=bool(delta_softplus))
    return (out, last_state) if return_last_state else out


def _scan_grad(op, dout, dlast_state):
    """Gradient of MambaSelectiveScan: one tensor (or None) per op input."""
    del dlast_state  # not supported (as in mamba_ssm): see selective_scan's doc
    attrs = {name: op.get_attr(name)
             for name in ("has_D", "has_z", "has_delta_bias", "delta_softplus")}
    if dout is None:
        return [None] * len(op.inputs)
    grads = _lib.mamba_selective_scan_grad(*op.inputs, dout=dout, **attrs)
    grads = list(grads)
    for index, flag in ((5, "has_D"), (6, "has_z"), (7, "has_delta_bias")):
        if not attrs[flag]:
            grads[index] = None  # the empty placeholder input has no gradient
    return grads


def _register_gradient():
    try:
        tf.RegisterGradient("MambaSelectiveScan")(_scan_grad)
    except KeyError:
        pass  # already registered in this process (module re-executed)
    try:
        tf.no_gradient("MambaSelectiveScanGrad")  # second order is not provided
    except KeyError:
        pass


_register_gradient()

# The raw generated op wrappers, for users who build graphs by hand.
raw_ops = _lib
