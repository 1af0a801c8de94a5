"""The whole Keras MambaVision (mvrt_tf.MambaVision): every golden model file
rebuilt from its metadata and weights, both input layouts, the published
configurations' sizes, Keras saving, and the config checks."""
import json
import os

import numpy as np
import keras
import pytest
import tensorflow as tf

import mvrt_tf
from tf_test_utils import assert_close, golden_entries, golden_files

MODEL_FILES = golden_files("*.safetensors")


def _golden_tolerance(got, ref, k, what):
    """The golden README's form: |d| <= k (RMS(ref) + |ref|)."""
    ref = np.asarray(ref, dtype=np.float64)
    rms = float(np.sqrt(np.mean(ref * ref)))
    assert_close(got, ref, k, k * rms, what)


MODEL_ENTRIES = [(p, n) for p in MODEL_FILES for n, _, _ in golden_entries(p, "model")]


@pytest.mark.skipif(not MODEL_ENTRIES, reason="no golden MambaVision model file")
@pytest.mark.parametrize("path,name", MODEL_ENTRIES, ids=lambda v: os.path.basename(str(v)))
def test_model_reproduces_golden(path, name):
    tensors, meta = mvrt_tf.load_safetensors(path)
    cfg = json.loads(meta[name])
    model = mvrt_tf.MambaVision(cfg, weights=tensors, prefix=name + ".weights.")
    x = tensors[name + ".input"]
    ref = tensors[name + ".output"]
    got = model(tf.constant(x)).numpy()
    assert got.dtype == np.float32
    # float32 end to end against the float64 model code: k = 1e-5 (the
    # mini model's logits come within 1.3e-6 of it; the C graph runner's
    # fp32 golden test allows the same order)
    _golden_tolerance(got, ref, 1e-5, name)
    # and the logits are not trivially equal: classes differ
    assert np.ptp(ref) > 1e-3
    # channels_last input gives the same logits (only the layout differs)
    last = mvrt_tf.MambaVision(cfg, weights=tensors, prefix=name + ".weights.", data_format="channels_last")
    got_last = last(tf.constant(np.transpose(x, (0, 2, 3, 1)))).numpy()
    assert_close(got_last, got, 1e-6, 1e-6, name + " channels_last")


def _parameter_count(model):
    return sum(int(np.prod(v.shape)) for v in model.trainable_variables)


@pytest.mark.parametrize("config,millions", [("T", 31.8), ("B", 97.7)])
def test_published_sizes(config, millions):
    # the spec's parameter counts (PyTorch's, which exclude BatchNorm's
    # running statistics: those are non-trainable here)
    model = mvrt_tf.MambaVision(config, seed=0)
    assert round(_parameter_count(model) / 1e6, 1) == millions
    names = model.torch_weights()
    assert "levels.2.blocks.0.mixer.in_proj.weight" in names
    assert "levels.2.blocks.%d.mixer.qkv.weight" % (model.cfg["depths"][2] - 1) in names
    assert ("levels.3.blocks.0.gamma_1" in names) == (config == "B")


def test_any_image_size_and_keras_saving(tmp_path):
    cfg = dict(dim=16, in_dim=8, depths=[1, 1, 2, 1], window_size=[4, 4, 3, 2], num_heads=[1, 2, 2, 4],
               num_classes=5, mlp_ratio=2)
    model = mvrt_tf.MambaVision(cfg, seed=3)
    x = np.random.default_rng(0).standard_normal((2, 3, 45, 38)).astype(np.float32)
    y = model(tf.constant(x)).numpy()
    assert y.shape == (2, 5) and np.all(np.isfinite(y))
    path = os.path.join(str(tmp_path), "mv.keras")
    model.save(path)
    again = keras.saving.load_model(path)
    assert_close(again(tf.constant(x)).numpy(), y, 0, 0, "reloaded .keras model")


def test_bad_configs():
    with pytest.raises(ValueError, match="unknown config"):
        mvrt_tf.MambaVision("XL")
    with pytest.raises(ValueError, match="lacks"):
        mvrt_tf.MambaVision({"dim": 8})
    with pytest.raises(ValueError, match="heads"):
        mvrt_tf.MambaVision(dict(dim=10, in_dim=8, depths=[1, 1, 1, 1], num_heads=[1, 1, 3, 3]))
    with pytest.raises(ValueError, match="data_format"):
        mvrt_tf.MambaVision("T", data_format="NCHW")


# Mixed precision: k of the golden tolerance per policy, about 3x what the
# mini model measured (bfloat16 0.018, float16 0.0028): every activation is
# rounded to the compute dtype (unit roundoff 2^-8 / 2^-11) through ~25
# layers, the softmax, BatchNorm factors and logits stay float32.
POLICY_K = {"mixed_bfloat16": 0.05, "mixed_float16": 0.01}


@pytest.mark.skipif(not MODEL_ENTRIES, reason="no golden MambaVision model file")
@pytest.mark.parametrize("policy", sorted(POLICY_K))
def test_mixed_precision_golden_and_training_step(policy):
    path, name = MODEL_ENTRIES[0]
    tensors, meta = mvrt_tf.load_safetensors(path)
    cfg = json.loads(meta[name])
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(policy)
    try:
        model = mvrt_tf.MambaVision(cfg, weights=tensors, prefix=name + ".weights.")
        assert model.net.compute_dtype == policy.split("_")[1]
        assert all(v.dtype == "float32" for v in model.trainable_variables)
        x = tensors[name + ".input"]
        got = model(tf.constant(x)).numpy()
        assert got.dtype == np.float32 and np.all(np.isfinite(got))
        _golden_tolerance(got, tensors[name + ".output"], POLICY_K[policy], name + " " + policy)
        # training steps (float16 with loss scaling): finite, and the loss falls
        opt = keras.optimizers.SGD(0.05)
        if policy == "mixed_float16":
            opt = keras.mixed_precision.LossScaleOptimizer(opt)
        model.compile(opt, keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        images = np.repeat(x, 4, axis=0)
        labels = np.arange(len(images)) % int(cfg["num_classes"])
        loss = model.fit(images, labels, epochs=4, batch_size=len(images), verbose=0).history["loss"]
        assert np.all(np.isfinite(loss)) and loss[-1] < loss[0], loss
    finally:
        keras.mixed_precision.set_global_policy(previous)


@pytest.mark.skipif(not MODEL_ENTRIES, reason="no golden MambaVision model file")
def test_saved_model_serves_in_a_fresh_process(tmp_path):
    """Export with a serving signature (any batch and image size); a new
    Python process that loads only the op library (no mvrt_tf) reloads it
    and returns the same logits."""
    import subprocess
    import sys
    path, name = MODEL_ENTRIES[0]
    tensors, meta = mvrt_tf.load_safetensors(path)
    model = mvrt_tf.MambaVision(json.loads(meta[name]), weights=tensors, prefix=name + ".weights.")
    x = tensors[name + ".input"]
    want = model(tf.constant(x)).numpy()
    export_dir = os.path.join(str(tmp_path), "saved")
    mvrt_tf.export_saved_model(model, export_dir)
    np.save(os.path.join(str(tmp_path), "x.npy"), x)
    script = (
        "import sys, numpy as np, tensorflow as tf\n"
        "tf.load_op_library(sys.argv[1])\n"
        "m = tf.saved_model.load(sys.argv[2])\n"
        "x = np.load(sys.argv[3])\n"
        "np.save(sys.argv[4], m.serve(tf.constant(x)).numpy())\n"
        "np.save(sys.argv[5], m.serve(tf.constant(x[:1, :, :40, :52])).numpy())\n")
    out, out_small = (os.path.join(str(tmp_path), f) for f in ("y.npy", "y_small.npy"))
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # mvrt_tf is not importable there
    proc = subprocess.run([sys.executable, "-c", script, mvrt_tf.library_path, export_dir,
                           os.path.join(str(tmp_path), "x.npy"), out, out_small],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert_close(np.load(out), want, 1e-6, 1e-6, "reloaded SavedModel")
    small = model(tf.constant(x[:1, :, :40, :52])).numpy()
    assert_close(np.load(out_small), small, 1e-6, 1e-6, "reloaded SavedModel, another size")


def test_batch_norm_training_mode_follows_pytorch():
    """training=True: batch statistics (biased variance) normalize, and the
    running ones move by momentum 0.1 (unbiased variance), as PyTorch's
    train(); the default call leaves them alone."""
    from mvrt_tf.model import _pytorch_conv
    cfg = dict(dim=16, in_dim=8, depths=[1, 1, 1, 1], window_size=[4, 4, 2, 2], num_heads=[1, 1, 2, 2],
               num_classes=3, mlp_ratio=2)
    model = mvrt_tf.MambaVision(cfg, seed=1)
    w = model.torch_weights()
    x = np.random.default_rng(4).standard_normal((3, 3, 20, 24)).astype(np.float32)
    before = model(tf.constant(x)).numpy()
    assert np.all(w["patch_embed.conv_down.1.running_mean"].numpy() == 0)
    trained = model(tf.constant(x), training=True).numpy()
    assert np.abs(trained - before).max() > 1e-4
    feats = _pytorch_conv(tf.transpose(tf.constant(x), [0, 2, 3, 1]),
                          w["patch_embed.conv_down.0.weight"], 2, 1).numpy().astype(np.float64)
    n = feats.shape[0] * feats.shape[1] * feats.shape[2]
    mean, var = feats.mean(axis=(0, 1, 2)), feats.var(axis=(0, 1, 2))
    assert_close(w["patch_embed.conv_down.1.running_mean"].numpy(), 0.1 * mean, 1e-5, 1e-6, "running_mean")
    assert_close(w["patch_embed.conv_down.1.running_var"].numpy(), 0.9 + 0.1 * var * n / (n - 1), 1e-5, 1e-6,
                 "running_var")
    # inference again: the updated running statistics, not the batch's
    again = model(tf.constant(x)).numpy()
    assert np.abs(again - trained).max() > 1e-6 and np.abs(again - before).max() > 1e-6
