"""Keras 3 layers of MambaVision: the mixer, the attention and the block.

Semantics and parameter names follow the public NVlabs MambaVision code
(shared/spec/mambavision.md): every weight is stored in PyTorch's layout
under its PyTorch name, so a MambaVision state dict loads with
load_torch_state_dict. Inputs are (batch, tokens, dim), like the model's
windows.

The scan is a custom op: XLA cannot compile it, so the layers set
supports_jit = False (Keras then resolves jit_compile="auto" to False).
"""
import math

import numpy as np
import keras
import tensorflow as tf

from ._ops import selective_scan


def _torch_linear_init(fan_in, seed):
    # PyTorch's nn.Linear / nn.Conv1d default: kaiming_uniform(a=sqrt(5)),
    # i.e. uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)).
    bound = 1.0 / math.sqrt(fan_in)
    return keras.initializers.RandomUniform(-bound, bound, seed=seed)


def _constant_init(values):
    values = np.asarray(values, dtype=np.float32)

    def init(shape, dtype=None):
        if tuple(shape) != values.shape:
            raise ValueError("initializer shape %s != %s" % (tuple(shape), values.shape))
        return tf.constant(values, dtype=dtype or tf.float32)
    return init


class _TorchNamedLayer(keras.layers.Layer):
    """A layer whose weights are kept under PyTorch names (torch_weights())."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_jit = False  # custom op: not XLA-compilable
        self._torch_names = {}

    def _weight(self, torch_name, shape, initializer, trainable=True):
        # Keras variable names may not contain '/', PyTorch's '.' is fine.
        # Statistics (non-trainable) stay float32 under mixed precision.
        var = self.add_weight(name=torch_name, shape=shape, initializer=initializer,
                              trainable=trainable, autocast=trainable)
        self._torch_names[torch_name] = var
        return var

    def torch_weights(self):
        """dict: PyTorch parameter name -> Keras variable (builds the layer if needed)."""
        if not self.built:
            self.build(None)
        return dict(self._torch_names)


@keras.saving.register_keras_serializable(package="mvrt_tf")
class MambaVisionMixer(_TorchNamedLayer):
    """MambaVision's token mixer: (batch, L, d_model) -> (batch, L, d_model).

    in_proj -> split x | z -> depthwise conv1d ('same', no bias) + SiLU on
    each half -> x_proj -> dt_proj -> selective scan of x (D, delta_bias =
    dt_proj.bias, softplus; the bias is applied twice, as in the model) ->
    concat(y, z) -> out_proj.
    """

    def __init__(self, d_model, d_state=8, d_conv=3, expand=1, dt_rank="auto", dt_min=0.001,
                 dt_max=0.1, dt_init_floor=1e-4, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.d_model = int(d_model)
        self.d_state = int(d_state)
        self.d_conv = int(d_conv)
        self.expand = expand
        self.d_inner = int(expand * self.d_model)
        if self.d_inner % 2:
            raise ValueError("MambaVisionMixer: expand * d_model must be even, got %d"
                             % self.d_inner)
        self.dt_rank = math.ceil(self.d_model / 16) if dt_rank == "auto" else int(dt_rank)
        self._dt_rank_arg = dt_rank
        self.dt_min, self.dt_max, self.dt_init_floor = dt_min, dt_max, dt_init_floor
        self.seed = seed

    def build(self, input_shape=None):
        if input_shape is not None and input_shape[-1] is not None \
                and int(input_shape[-1]) != self.d_model:
            raise ValueError("MambaVisionMixer(d_model=%d) called on inputs with last dim %s"
                             % (self.d_model, input_shape[-1]))
        half, n, r = self.d_inner // 2, self.d_state, self.dt_rank
        seed = self.seed
        rng = np.random.default_rng(seed)
        self.in_proj_weight = self._weight("in_proj.weight", (self.d_inner, self.d_model),
                                           _torch_linear_init(self.d_model, seed))
        self.conv1d_x_weight = self._weight("conv1d_x.weight", (half, 1, self.d_conv),
                                            _torch_linear_init(self.d_conv, seed))
        self.conv1d_z_weight = self._weight("conv1d_z.weight", (half, 1, self.d_conv),
                                            _torch_linear_init(self.d_conv, seed))
        self.x_proj_weight = self._weight("x_proj.weight", (r + 2 * n, half),
                                          _torch_linear_init(half, seed))
        dt_std = r ** -0.5
        self.dt_proj_weight = self._weight("dt_proj.weight", (half, r),
                                           keras.initializers.RandomUniform(-dt_std, dt_std,
                                                                            seed=seed))
        # dt_proj.bias = softplus^-1(dt), dt log-uniform in [dt_min, dt_max].
        dt = np.exp(rng.random(half) * (math.log(self.dt_max) - math.log(self.dt_min))
                    + math.log(self.dt_min))
        dt = np.maximum(dt, self.dt_init_floor)
        self.dt_proj_bias = self._weight("dt_proj.bias", (half,),
                                         _constant_init(dt + np.log(-np.expm1(-dt))))
        self.A_log = self._weight("A_log", (half, n), _constant_init(
            np.log(np.tile(np.arange(1, n + 1, dtype=np.float32), (half, 1)))))
        self.D = self._weight("D", (half,), keras.initializers.Ones())
        self.out_proj_weight = self._weight("out_proj.weight", (self.d_model, self.d_inner),
                                            _torch_linear_init(self.d_inner, seed))
        self.built = True

    def _depthwise_same(self, x, weight):
        # PyTorch conv1d(padding='same', groups=channels) is a cross-correlation
        # with (k-1)//2 zeros on the left and the rest on the right.
        k = self.d_conv
        left = (k - 1) // 2
        xp = tf.pad(x, [[0, 0], [left, k - 1 - left], [0, 0]])
        length = tf.shape(x)[1]
        w = tf.cast(weight[:, 0, :], x.dtype)  # (channels, k)
        y = xp[:, 0:length, :] * w[:, 0]
        for j in range(1, k):
            y = y + xp[:, j:j + length, :] * w[:, j]
        return y

    def call(self, hidden_states):
        h = tf.convert_to_tensor(hidden_states)
        dt_type = h.dtype
        state_type = tf.float64 if dt_type == tf.float64 else tf.float32
        half, n, r = self.d_inner // 2, self.d_state, self.dt_rank

        def w(var):
            return tf.cast(var, dt_type)

        xz = tf.matmul(h, w(self.in_proj_weight), transpose_b=True)        # (B, L, d_inner)
        x, z = xz[..., :half], xz[..., half:]
        x = tf.nn.silu(self._depthwise_same(x, self.conv1d_x_weight))
        z = tf.nn.silu(self._depthwise_same(z, self.conv1d_z_weight))
        x_dbl = tf.matmul(x, w(self.x_proj_weight), transpose_b=True)      # (B, L, r + 2N)
        dt = x_dbl[..., :r]
        B = x_dbl[..., r:r + n]
        C = x_dbl[..., r + n:]
        bias = tf.cast(self.dt_proj_bias, state_type)
        dt = tf.matmul(dt, w(self.dt_proj_weight), transpose_b=True) + tf.cast(bias, dt_type)
        A = -tf.exp(tf.cast(self.A_log, state_type))
        y = selective_scan(
            tf.transpose(x, [0, 2, 1]), tf.transpose(dt, [0, 2, 1]), A,
            tf.transpose(B, [0, 2, 1]), tf.transpose(C, [0, 2, 1]),
            D=tf.cast(self.D, state_type), z=None, delta_bias=bias, delta_softplus=True)
        y = tf.concat([tf.transpose(y, [0, 2, 1]), z], axis=-1)            # (B, L, d_inner)
        return tf.matmul(y, w(self.out_proj_weight), transpose_b=True)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(d_model=self.d_model, d_state=self.d_state, d_conv=self.d_conv,
                      expand=self.expand, dt_rank=self._dt_rank_arg, dt_min=self.dt_min,
                      dt_max=self.dt_max, dt_init_floor=self.dt_init_floor, seed=self.seed)
        return config


@keras.saving.register_keras_serializable(package="mvrt_tf")
class MambaVisionAttention(_TorchNamedLayer):
    """The attention mixer of MambaVision's hybrid stages: (batch, L, dim) ->
    (batch, L, dim). qkv (3 dim, dim) with an optional bias, split as (3,
    heads, head_dim); softmax(q k^T / sqrt(head_dim)) v over all L tokens
    (not causal, no q/k norm); proj (dim, dim) with a bias."""

    def __init__(self, dim, num_heads, qkv_bias=True, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.dim = int(dim)
        self.num_heads = int(num_heads)
        if self.num_heads < 1 or self.dim % self.num_heads:
            raise ValueError("MambaVisionAttention: dim %d is not a multiple of num_heads %d"
                             % (self.dim, self.num_heads))
        self.qkv_bias = bool(qkv_bias)
        self.seed = seed

    def build(self, input_shape=None):
        d, seed = self.dim, self.seed
        self.qkv_weight = self._weight("qkv.weight", (3 * d, d), _torch_linear_init(d, seed))
        if self.qkv_bias:
            self.qkv_b = self._weight("qkv.bias", (3 * d,), _torch_linear_init(d, seed))
        self.proj_weight = self._weight("proj.weight", (d, d), _torch_linear_init(d, seed))
        self.proj_bias = self._weight("proj.bias", (d,), _torch_linear_init(d, seed))
        self.built = True

    def call(self, x):
        x = tf.convert_to_tensor(x)
        t = x.dtype
        heads, hd = self.num_heads, self.dim // self.num_heads
        qkv = tf.matmul(x, tf.cast(self.qkv_weight, t), transpose_b=True)
        if self.qkv_bias:
            qkv = qkv + tf.cast(self.qkv_b, t)
        batch, length = tf.shape(x)[0], tf.shape(x)[1]
        qkv = tf.transpose(tf.reshape(qkv, [batch, length, 3, heads, hd]), [2, 0, 3, 1, 4])
        q, k, v = qkv[0], qkv[1], qkv[2]                       # (B, heads, L, hd)
        scores = tf.matmul(q, k, transpose_b=True) * tf.cast(hd ** -0.5, t)
        # the softmax in float32 at least (16-bit policies)
        weights = tf.cast(tf.nn.softmax(tf.cast(scores, tf.float32) if t in (tf.float16, tf.bfloat16)
                                        else scores, axis=-1), t)
        y = tf.reshape(tf.transpose(tf.matmul(weights, v), [0, 2, 1, 3]), [batch, length, self.dim])
        return tf.matmul(y, tf.cast(self.proj_weight, t), transpose_b=True) + tf.cast(self.proj_bias, t)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(dim=self.dim, num_heads=self.num_heads, qkv_bias=self.qkv_bias, seed=self.seed)
        return config


@keras.saving.register_keras_serializable(package="mvrt_tf")
class MambaVisionBlock(_TorchNamedLayer):
    """MambaVision's Block: x + g1 * mixer(LN1(x)), then + g2 * mlp(LN2(x)).

    The mixer is MambaVisionMixer, or MambaVisionAttention with
    attention=True (num_heads heads, qkv_bias). LayerNorm eps 1e-5; mlp =
    fc1 (dim -> mlp_ratio * dim) -> exact GELU -> fc2. layer_scale (a number) adds gamma_1/gamma_2 initialised to it, as the
    model's use_layer_scale does; None means no layer scale. No dropout or
    drop-path (inference semantics; add them around the layer if training needs them).
    """

    def __init__(self, dim, mlp_ratio=4.0, d_state=8, d_conv=3, expand=1, dt_rank="auto",
                 layer_scale=None, norm_eps=1e-5, seed=None, attention=False, num_heads=1,
                 qkv_bias=True, **kwargs):
        super().__init__(**kwargs)
        self.dim = int(dim)
        self.mlp_ratio = mlp_ratio
        self.hidden = int(self.dim * mlp_ratio)
        self.layer_scale = layer_scale
        self.norm_eps = norm_eps
        self.seed = seed
        self.attention = bool(attention)
        if self.attention:
            self._mixer_args = dict(attention=True, num_heads=int(num_heads), qkv_bias=bool(qkv_bias))
            self.mixer = MambaVisionAttention(self.dim, int(num_heads), qkv_bias=qkv_bias, seed=seed,
                                              name="mixer", dtype=self.dtype_policy)
        else:
            self._mixer_args = dict(d_state=d_state, d_conv=d_conv, expand=expand, dt_rank=dt_rank)
            self.mixer = MambaVisionMixer(self.dim, seed=seed, name="mixer", dtype=self.dtype_policy,
                                          **self._mixer_args)

    def build(self, input_shape=None):
        d, hdn, seed = self.dim, self.hidden, self.seed
        self.norm1_weight = self._weight("norm1.weight", (d,), keras.initializers.Ones())
        self.norm1_bias = self._weight("norm1.bias", (d,), keras.initializers.Zeros())
        self.mixer.build(input_shape)
        for name, var in self.mixer._torch_names.items():
            self._torch_names["mixer." + name] = var
        self.norm2_weight = self._weight("norm2.weight", (d,), keras.initializers.Ones())
        self.norm2_bias = self._weight("norm2.bias", (d,), keras.initializers.Zeros())
        self.fc1_weight = self._weight("mlp.fc1.weight", (hdn, d), _torch_linear_init(d, seed))
        self.fc1_bias = self._weight("mlp.fc1.bias", (hdn,), _torch_linear_init(d, seed))
        self.fc2_weight = self._weight("mlp.fc2.weight", (d, hdn), _torch_linear_init(hdn, seed))
        self.fc2_bias = self._weight("mlp.fc2.bias", (d,), _torch_linear_init(hdn, seed))
        if self.layer_scale is not None:
            init = keras.initializers.Constant(float(self.layer_scale))
            self.gamma_1 = self._weight("gamma_1", (d,), init)
            self.gamma_2 = self._weight("gamma_2", (d,), init)
        self.built = True

    def _layer_norm(self, x, weight, bias):
        mean, var = tf.nn.moments(x, axes=[-1], keepdims=True)
        x = (x - mean) * tf.math.rsqrt(var + tf.cast(self.norm_eps, x.dtype))
        return x * tf.cast(weight, x.dtype) + tf.cast(bias, x.dtype)

    def call(self, x):
        x = tf.convert_to_tensor(x)
        t = x.dtype
        y = self.mixer(self._layer_norm(x, self.norm1_weight, self.norm1_bias))
        if self.layer_scale is not None:
            y = y * tf.cast(self.gamma_1, t)
        x = x + y
        h = self._layer_norm(x, self.norm2_weight, self.norm2_bias)
        h = tf.matmul(h, tf.cast(self.fc1_weight, t), transpose_b=True) + tf.cast(self.fc1_bias, t)
        h = tf.nn.gelu(h, approximate=False)
        h = tf.matmul(h, tf.cast(self.fc2_weight, t), transpose_b=True) + tf.cast(self.fc2_bias, t)
        if self.layer_scale is not None:
            h = h * tf.cast(self.gamma_2, t)
        return x + h

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(dim=self.dim, mlp_ratio=self.mlp_ratio, layer_scale=self.layer_scale,
                      norm_eps=self.norm_eps, seed=self.seed, **self._mixer_args)
        return config


def load_torch_state_dict(layer, state_dict, prefix="", strict=True):
    """Copies PyTorch-named arrays into a layer of this package (a mixer,
    an attention, a block or the whole MambaVision model).

    state_dict: mapping name -> array (numpy, or anything np.asarray takes),
    e.g. from mvrt_tf.load_safetensors or {k: v.numpy() for k, v in
    torch_module.state_dict().items()}. prefix is prepended to each of the
    layer's names ("levels.2.blocks.0." for a block of a full model).
    strict: every weight of the layer must be present (extra keys under
    prefix are an error too). Shapes must match exactly. Returns the list of
    names loaded.
    """
    weights = layer.torch_weights()
    loaded, missing = [], []
    for name, var in weights.items():
        key = prefix + name
        if key not in state_dict:
            missing.append(key)
            continue
        value = np.asarray(state_dict[key])
        if tuple(value.shape) != tuple(var.shape):
            raise ValueError("%s: shape %s does not match the layer's %s"
                             % (key, tuple(value.shape), tuple(var.shape)))
        var.assign(value.astype(np.dtype(var.dtype)))
        loaded.append(key)
    if strict:
        expected = {prefix + n for n in weights}
        unexpected = sorted(k for k in state_dict if k.startswith(prefix) and k not in expected
                            and not k.endswith("num_batches_tracked"))
        if missing or unexpected:
            raise ValueError("load_torch_state_dict: missing %s, unexpected %s"
                             % (missing, unexpected))
    return loaded
