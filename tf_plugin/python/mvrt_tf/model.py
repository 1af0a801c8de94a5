"""The whole MambaVision network as a Keras 3 model.

Architecture and parameter names follow the public NVlabs code
(shared/spec/mambavision.md): the stem (two stride-2 3x3 convs with
BatchNorm and ReLU), two stages of ConvBlocks, two hybrid stages (window
partition, mixer blocks then attention blocks, window reverse), stride-2
downsamplers between stages, and the head (BatchNorm, global average pool,
Linear). Every variable is kept under its PyTorch name and layout, so the
safetensors files that `mvrt run --weights` reads (converted with
tools/convert_checkpoint.py) and the golden model files load unchanged.

BatchNorm follows PyTorch's train() / eval(): with training=True (Keras'
fit) it normalizes with the batch's statistics and updates the running
ones (momentum 0.1); otherwise it uses the running statistics. To
fine-tune with frozen statistics, call the model with training=False.
Inside, maps are channels-last (NHWC).
"""
import keras
import tensorflow as tf

from .layers import MambaVisionBlock, _TorchNamedLayer, _torch_linear_init, load_torch_state_dict
from .safetensors_io import load_safetensors

# The published configurations (mlp_ratio 4, windows [8, 8, 14, 7], qkv bias).
CONFIGS = {
    "T": dict(dim=80, in_dim=32, depths=[1, 3, 8, 4], num_heads=[2, 4, 8, 16]),
    "T2": dict(dim=80, in_dim=32, depths=[1, 3, 11, 4], num_heads=[2, 4, 8, 16]),
    "S": dict(dim=96, in_dim=64, depths=[3, 3, 7, 5], num_heads=[2, 4, 8, 16]),
    "B": dict(dim=128, in_dim=64, depths=[3, 3, 10, 5], num_heads=[2, 4, 8, 16], layer_scale=1e-5),
    "L": dict(dim=196, in_dim=64, depths=[3, 3, 10, 5], num_heads=[4, 8, 16, 32], layer_scale=1e-5),
    "L2": dict(dim=196, in_dim=64, depths=[3, 3, 12, 5], num_heads=[4, 8, 16, 32], layer_scale=1e-5),
}
_DEFAULTS = dict(window_size=[8, 8, 14, 7], mlp_ratio=4, num_classes=1000, qkv_bias=True,
                 layer_scale=None, layer_scale_conv=None, in_chans=3)


def model_config(config):
    """The full configuration dict of a config name ("T", ...) or of a dict
    with the golden files' model keys (dim, in_dim, depths, window_size,
    mlp_ratio, num_heads, num_classes, qkv_bias, layer_scale; others are
    ignored)."""
    if isinstance(config, str):
        if config not in CONFIGS:
            raise ValueError("MambaVision: unknown config %r (known: %s)" % (config, ", ".join(CONFIGS)))
        cfg = dict(_DEFAULTS, **CONFIGS[config])
    elif isinstance(config, dict):
        missing = [k for k in ("dim", "in_dim", "depths", "num_heads") if k not in config]
        if missing:
            raise ValueError("MambaVision: config dict lacks %s" % missing)
        cfg = dict(_DEFAULTS)
        cfg.update({k: config[k] for k in config if k in set(_DEFAULTS) | {"dim", "in_dim", "depths", "num_heads"}})
    else:
        raise TypeError("MambaVision: config must be a name or a dict, not %r" % type(config).__name__)
    for key in ("depths", "num_heads", "window_size"):
        if len(cfg[key]) != 4:
            raise ValueError("MambaVision: %s must have 4 entries, got %r" % (key, cfg[key]))
    for level in range(4):
        width = int(cfg["dim"]) << level
        if level >= 2 and width % int(cfg["num_heads"][level]):
            raise ValueError("MambaVision: stage %d width %d is not a multiple of %d heads"
                             % (level, width, cfg["num_heads"][level]))
    return cfg


def _pytorch_conv(x, weight, stride, pad):
    """PyTorch's Conv2d (cross-correlation, symmetric zero padding) on an
    NHWC map with a weight stored (out, in, kh, kw)."""
    w = tf.transpose(tf.cast(weight, x.dtype), [2, 3, 1, 0])  # HWIO
    return tf.nn.conv2d(x, w, strides=stride, padding=[[0, 0], [pad, pad], [pad, pad], [0, 0]])


class _MambaVisionNet(_TorchNamedLayer):
    """The network's variables and forward pass (NHWC in, logits out)."""

    def __init__(self, cfg, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.cfg = cfg
        self.seed = seed
        # the blocks of the hybrid stages (levels 2 and 3), a list per level
        # (SavedModel tracking wants lists or string-keyed dicts)
        self.hybrid_blocks = []
        c = cfg
        for level in (2, 3):
            width, depth = int(c["dim"]) << level, int(c["depths"][level])
            first_attention = (depth + 1) // 2
            self.hybrid_blocks.append([
                MambaVisionBlock(width, mlp_ratio=c["mlp_ratio"], layer_scale=c["layer_scale"],
                                 attention=i >= first_attention, num_heads=c["num_heads"][level],
                                 qkv_bias=c["qkv_bias"], seed=seed, dtype=self.dtype_policy,
                                 name="levels.%d.blocks.%d" % (level, i))
                for i in range(depth)])

    def _bn(self, prefix, channels):
        self._weight(prefix + "weight", (channels,), keras.initializers.Ones())
        self._weight(prefix + "bias", (channels,), keras.initializers.Zeros())
        self._weight(prefix + "running_mean", (channels,), keras.initializers.Zeros(), trainable=False)
        self._weight(prefix + "running_var", (channels,), keras.initializers.Ones(), trainable=False)

    def _conv(self, prefix, cout, cin, bias):
        fan_in = cin * 9
        self._weight(prefix + "weight", (cout, cin, 3, 3), _torch_linear_init(fan_in, self.seed))
        if bias:
            self._weight(prefix + "bias", (cout,), _torch_linear_init(fan_in, self.seed))

    def build(self, input_shape=None):
        c = self.cfg
        dim, in_dim = int(c["dim"]), int(c["in_dim"])
        self._conv("patch_embed.conv_down.0.", in_dim, int(c["in_chans"]), False)
        self._bn("patch_embed.conv_down.1.", in_dim)
        self._conv("patch_embed.conv_down.3.", dim, in_dim, False)
        self._bn("patch_embed.conv_down.4.", dim)
        for level in range(4):
            width = dim << level
            p = "levels.%d." % level
            if level < 2:
                for i in range(int(c["depths"][level])):
                    q = "%sblocks.%d." % (p, i)
                    self._conv(q + "conv1.", width, width, True)
                    self._bn(q + "norm1.", width)
                    self._conv(q + "conv2.", width, width, True)
                    self._bn(q + "norm2.", width)
                    if c["layer_scale_conv"] is not None:
                        self._weight(q + "gamma", (width,),
                                     keras.initializers.Constant(float(c["layer_scale_conv"])))
            else:
                for i, block in enumerate(self.hybrid_blocks[level - 2]):
                    block.build((None, None, width))
                    for name, var in block.torch_weights().items():
                        self._torch_names["%sblocks.%d.%s" % (p, i, name)] = var
            if level < 3:
                self._conv(p + "downsample.reduction.0.", 2 * width, width, False)
        self._bn("norm.", dim << 3)
        self._weight("head.weight", (int(c["num_classes"]), dim << 3), _torch_linear_init(dim << 3, self.seed))
        self._weight("head.bias", (int(c["num_classes"]),), _torch_linear_init(dim << 3, self.seed))
        self.built = True

    def _w(self, name):
        return self._torch_names[name]

    def _batch_norm(self, x, prefix, eps, training):
        """PyTorch's BatchNorm2d on an NHWC map: the running statistics, or
        in training the batch's (biased variance), whose momentum-0.1
        average (unbiased variance) then updates the running ones."""
        t = x.dtype
        mean_var, var_var = self._w(prefix + "running_mean"), self._w(prefix + "running_var")
        if training:
            x32 = tf.cast(x, tf.float32)
            mean, var = tf.nn.moments(x32, axes=[0, 1, 2])
            count = tf.cast(tf.reduce_prod(tf.shape(x32)[:3]), tf.float32)
            unbiased = var * count / tf.maximum(count - 1.0, 1.0)
            mean_var.assign(0.9 * mean_var + 0.1 * mean)
            var_var.assign(0.9 * var_var + 0.1 * unbiased)
        else:
            mean, var = tf.cast(mean_var, tf.float32), tf.cast(var_var, tf.float32)
        scale = tf.cast(self._w(prefix + "weight"), tf.float32) * tf.math.rsqrt(var + eps)
        shift = tf.cast(self._w(prefix + "bias"), tf.float32) - mean * scale
        return x * tf.cast(scale, t) + tf.cast(shift, t)

    def _conv_block(self, x, q, training):
        h = _pytorch_conv(x, self._w(q + "conv1.weight"), 1, 1) + tf.cast(self._w(q + "conv1.bias"), x.dtype)
        h = tf.nn.gelu(self._batch_norm(h, q + "norm1.", 1e-5, training), approximate=True)
        h = _pytorch_conv(h, self._w(q + "conv2.weight"), 1, 1) + tf.cast(self._w(q + "conv2.bias"), x.dtype)
        h = self._batch_norm(h, q + "norm2.", 1e-5, training)
        if self.cfg["layer_scale_conv"] is not None:
            h = h * tf.cast(self._w(q + "gamma"), x.dtype)
        return x + h

    def _hybrid_stage(self, x, level):
        ws = int(self.cfg["window_size"][level])
        shape = tf.shape(x)
        batch, height, width, channels = shape[0], shape[1], shape[2], x.shape[-1]
        pad_b, pad_r = (ws - height % ws) % ws, (ws - width % ws) % ws
        x = tf.pad(x, [[0, 0], [0, pad_b], [0, pad_r], [0, 0]])
        hp, wp = height + pad_b, width + pad_r
        nh, nw = hp // ws, wp // ws
        # windows in row-major order, tokens row-major inside a window
        t = tf.reshape(tf.transpose(tf.reshape(x, [batch, nh, ws, nw, ws, channels]), [0, 1, 3, 2, 4, 5]),
                       [batch * nh * nw, ws * ws, channels])
        for block in self.hybrid_blocks[level - 2]:
            t = block(t)
        x = tf.reshape(tf.transpose(tf.reshape(t, [batch, nh, nw, ws, ws, channels]), [0, 1, 3, 2, 4, 5]),
                       [batch, hp, wp, channels])
        return x[:, :height, :width, :]

    def call(self, x, training=False):
        x = tf.convert_to_tensor(x)
        if x.dtype != self.compute_dtype:
            x = tf.cast(x, self.compute_dtype)
        for conv, bn in ((0, 1), (3, 4)):
            x = _pytorch_conv(x, self._w("patch_embed.conv_down.%d.weight" % conv), 2, 1)
            x = tf.nn.relu(self._batch_norm(x, "patch_embed.conv_down.%d." % bn, 1e-4, training))
        for level in range(4):
            p = "levels.%d." % level
            if level < 2:
                for i in range(int(self.cfg["depths"][level])):
                    x = self._conv_block(x, "%sblocks.%d." % (p, i), training)
            else:
                x = self._hybrid_stage(x, level)
            if level < 3:
                x = _pytorch_conv(x, self._w(p + "downsample.reduction.0.weight"), 2, 1)
        x = self._batch_norm(x, "norm.", 1e-5, training)
        x = tf.reduce_mean(tf.cast(x, tf.float32), axis=[1, 2])
        # the head in float32 (mixed-precision policies keep logits float32)
        return tf.matmul(x, tf.cast(self._w("head.weight"), tf.float32), transpose_b=True) + \
            tf.cast(self._w("head.bias"), tf.float32)


@keras.saving.register_keras_serializable(package="mvrt_tf")
class MambaVision(keras.Model):
    """MambaVision as a Keras 3 model: images -> logits (float32).

    config: "T", "T2", "S", "B", "L", "L2", or a dict with the golden
    files' model keys (dim, in_dim, depths, window_size, mlp_ratio,
    num_heads, num_classes, qkv_bias, layer_scale). weights: None (PyTorch's
    default initialization from `seed`), or a .safetensors file (or a dict
    name -> array) under the PyTorch parameter names, optionally below
    `prefix`, loaded strictly. data_format: "channels_first" (NCHW, as the
    PyTorch model and the golden files take images; default) or
    "channels_last" (NHWC, Keras' usual). Any image size works (hybrid
    stages pad to whole windows and crop back).
    """

    def __init__(self, config="T", weights=None, prefix="", data_format="channels_first", seed=None,
                 **kwargs):
        super().__init__(**kwargs)
        if data_format not in ("channels_first", "channels_last"):
            raise ValueError("MambaVision: data_format must be channels_first or channels_last, not %r"
                             % (data_format,))
        self.config_arg = config
        self.cfg = model_config(config)
        self.data_format = data_format
        self.seed = seed
        self.net = _MambaVisionNet(self.cfg, seed=seed, name="mambavision", dtype=self.dtype_policy)
        self.net.build(None)
        # every variable exists now: no deferred build (which Keras would
        # otherwise run on a first batch, outside a distribution strategy)
        self.built = True
        if weights is not None:
            self.load_torch_weights(weights, prefix=prefix)

    def torch_weights(self):
        """dict: PyTorch parameter name -> Keras variable."""
        return self.net.torch_weights()

    def load_torch_weights(self, weights, prefix="", strict=True):
        """Loads a .safetensors path or a dict name -> array (PyTorch names
        below `prefix`); returns the names loaded."""
        if isinstance(weights, str):
            weights, _ = load_safetensors(weights)
        return load_torch_state_dict(self.net, weights, prefix=prefix, strict=strict)

    def call(self, images, training=False):
        x = tf.convert_to_tensor(images)
        if self.data_format == "channels_first":
            x = tf.transpose(x, [0, 2, 3, 1])
        return self.net(x, training=bool(training))

    def get_config(self):
        config = super().get_config()
        config.update(config=self.config_arg, data_format=self.data_format, seed=self.seed)
        return config


def export_saved_model(model, export_dir, endpoint="serve"):
    """Writes `model` (a MambaVision) as a TensorFlow SavedModel with one
    serving function, `endpoint`: float32 images of any batch and size in
    the model's data_format -> float32 logits. Serving it needs TensorFlow
    and the op library only: tf.load_op_library(mvrt_tf.library_path) (or
    import mvrt_tf), then tf.saved_model.load(export_dir).<endpoint>(x)."""
    channels = int(model.cfg["in_chans"])
    shape = [None, channels, None, None] if model.data_format == "channels_first" else [None, None, None, channels]
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint(name=endpoint, fn=model.call, input_signature=[tf.TensorSpec(shape, tf.float32)])
    archive.write_out(export_dir)
    return export_dir
