"""Keras 3 MambaVision layers: golden block reproduction with the model's
own weights, and a few training steps that reduce the loss."""
import os

import numpy as np
import keras
import pytest
import tensorflow as tf

import mvrt_tf
from tf_test_utils import assert_close, golden_entries, golden_files

BLOCK_FILES = golden_files("mv_mixer_block*.safetensors")


@pytest.mark.skipif(not BLOCK_FILES, reason="no mv_mixer_block golden file")
@pytest.mark.parametrize("path", BLOCK_FILES, ids=os.path.basename)
def test_block_reproduces_golden(path):
    found = 0
    for name, cfg, tensors in golden_entries(path, "mixer"):
        found += 1
        prefix = name + ".weights."
        layer_scale = None
        if prefix + "gamma_1" in tensors:
            layer_scale = 1.0  # the loaded values replace the init value
        block = mvrt_tf.MambaVisionBlock(
            cfg["dim"], mlp_ratio=cfg.get("mlp_ratio", 4), d_state=cfg.get("d_state", 8),
            d_conv=cfg.get("d_conv", 3), expand=cfg.get("expand", 1),
            dt_rank=cfg.get("dt_rank", "auto"), layer_scale=layer_scale)
        loaded = mvrt_tf.load_torch_state_dict(block, tensors, prefix=prefix)
        assert len(loaded) == len(block.torch_weights())
        x = tensors[name + ".input"]
        got = block(tf.constant(x)).numpy()
        # float32 end to end vs the float64 model; residual values are O(1)
        assert_close(got, tensors[name + ".output"], 1e-4, 2e-4, name)
        # and the block does something: not the identity
        assert np.abs(tensors[name + ".output"] - x).max() > 1e-2

        # the mixer alone, in float64, matches the same computation in float32
        mixer64 = mvrt_tf.MambaVisionMixer(cfg["dim"], d_state=cfg.get("d_state", 8),
                                           dt_rank=cfg.get("dt_rank", "auto"), dtype="float64")
        mvrt_tf.load_torch_state_dict(mixer64, tensors, prefix=prefix + "mixer.")
        h = tf.constant(x[:, :50])
        y32 = block.mixer(h).numpy()
        y64 = mixer64(tf.cast(h, tf.float64)).numpy()
        assert_close(y32, y64, 1e-4, 1e-4, name + " mixer f32 vs f64")
    assert found, "no mixer block in %s" % path


def test_state_dict_errors():
    block = mvrt_tf.MambaVisionBlock(32)
    sd = {k: np.zeros(v.shape, np.float32) for k, v in block.torch_weights().items()}
    mvrt_tf.load_torch_state_dict(block, sd)
    bad = dict(sd)
    bad["mixer.A_log"] = np.zeros((3, 3), np.float32)
    with pytest.raises(ValueError, match="mixer.A_log"):
        mvrt_tf.load_torch_state_dict(block, bad)
    missing = dict(sd)
    del missing["norm1.weight"]
    with pytest.raises(ValueError, match="norm1.weight"):
        mvrt_tf.load_torch_state_dict(block, missing)


def test_layer_scale_weights_and_config():
    block = mvrt_tf.MambaVisionBlock(32, layer_scale=1e-5)
    names = set(block.torch_weights())
    assert {"gamma_1", "gamma_2", "mixer.A_log", "mixer.dt_proj.bias"} <= names
    assert block.supports_jit is False and block.mixer.supports_jit is False
    clone = mvrt_tf.MambaVisionBlock.from_config(block.get_config())
    assert clone.layer_scale == 1e-5 and clone.dim == 32


def test_training_reduces_loss():
    keras.utils.set_random_seed(0)
    dim, tokens = 32, 16
    inputs = keras.Input((tokens, dim))
    h = mvrt_tf.MambaVisionBlock(dim, layer_scale=None, seed=1)(inputs)
    h = mvrt_tf.MambaVisionMixer(dim, seed=2)(h)
    outputs = keras.layers.Dense(1)(keras.layers.GlobalAveragePooling1D()(h))
    model = keras.Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.Adam(3e-3), loss="mse")  # jit_compile="auto"
    assert not model.jit_compile  # custom op: Keras must not pick XLA
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, tokens, dim)).astype(np.float32)
    y = (x[:, :, :4].mean(axis=(1, 2)) * 3.0)[:, None].astype(np.float32)
    before = model.evaluate(x, y, verbose=0)
    hist = model.fit(x, y, batch_size=16, epochs=6, verbose=0)
    after = model.evaluate(x, y, verbose=0)
    assert np.all(np.isfinite(hist.history["loss"]))
    assert after < 0.7 * before, (before, after, hist.history["loss"])
    # every mixer parameter received a gradient (moved from its init)
    mixer = model.layers[1].mixer
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x[:8]) - y[:8]))
    grads = tape.gradient(loss, mixer.trainable_variables)
    for var, g in zip(mixer.trainable_variables, grads):
        assert g is not None and float(tf.reduce_max(tf.abs(g))) > 0, var.path


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_precision_block(policy):
    keras.utils.set_random_seed(1)
    x = np.random.default_rng(2).standard_normal((2, 20, 32)).astype(np.float32)
    ref = mvrt_tf.MambaVisionBlock(32, seed=3)
    want = ref(x).numpy()
    low = mvrt_tf.MambaVisionBlock(32, seed=3, dtype=policy)
    low.build((None, 20, 32))
    for name, var in low.torch_weights().items():
        var.assign(ref.torch_weights()[name])
        assert var.dtype == "float32"  # variables stay float32 under mixed policies
    with tf.GradientTape() as tape:
        got = low(x)
        loss = tf.reduce_sum(tf.cast(got, tf.float32) ** 2)
    assert got.dtype == policy.split("_")[1]
    grads = tape.gradient(loss, low.trainable_variables)
    assert all(g is not None and np.all(np.isfinite(g.numpy())) for g in grads)
    tol = 2e-2 if policy == "mixed_float16" else 1.5e-1
    assert_close(tf.cast(got, tf.float32).numpy(), want, tol, tol, policy)


def test_keras_model_save_and_load(tmp_path):
    inputs = keras.Input((12, 32))
    outputs = mvrt_tf.MambaVisionBlock(32, layer_scale=0.5, seed=4)(inputs)
    model = keras.Model(inputs, outputs)
    x = np.random.default_rng(3).standard_normal((3, 12, 32)).astype(np.float32)
    want = model(x).numpy()
    path = str(tmp_path / "block.keras")
    model.save(path)
    loaded = keras.models.load_model(path)  # the layers are registered serializables
    np.testing.assert_array_equal(loaded(x).numpy(), want)
