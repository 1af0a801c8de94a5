"""mvrt_tf: the mvrt selective scan as a TensorFlow op, with gradients and
Keras 3 MambaVision layers.

    import mvrt_tf
    out = mvrt_tf.selective_scan(u, delta, A, B, C, D=D, delta_bias=bias,
                                 delta_softplus=True)
    layer = mvrt_tf.MambaVisionMixer(d_model=320)
    model = mvrt_tf.MambaVision("T", weights="mambavision_t.safetensors")

Import this package before tf.saved_model.load of a model that uses the op:
importing it registers the ops and their gradient.
"""
from ._ops import library_path, raw_ops, selective_scan
from .layers import MambaVisionAttention, MambaVisionBlock, MambaVisionMixer, load_torch_state_dict
from .model import MambaVision, export_saved_model, model_config
from .safetensors_io import load_safetensors

__all__ = [
    "selective_scan",
    "MambaVisionMixer",
    "MambaVisionBlock",
    "MambaVisionAttention",
    "MambaVision",
    "model_config",
    "export_saved_model",
    "load_torch_state_dict",
    "load_safetensors",
    "library_path",
    "raw_ops",
]
try:  # an installed package: its version is mvrt's (include/mvrt/core.h)
    from importlib.metadata import version as _dist_version
    from . import _build_info  # noqa: F401  (written into installed packages only)
    __version__ = _dist_version("mvrt-tf")
except ImportError:  # a build tree on PYTHONPATH
    __version__ = "0+unknown"
