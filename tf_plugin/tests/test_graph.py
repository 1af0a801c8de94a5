"""The op inside tf.function (unknown batch and length), under GradientTape,
and through a SavedModel reloaded in a fresh process."""
import json
import os
import subprocess
import sys

import numpy as np
import tensorflow as tf

import mvrt_tf


def _inputs(rng, batch, dim=6, length=20, n=4):
    f = np.float32
    return dict(
        u=rng.standard_normal((batch, dim, length)).astype(f),
        delta=(0.5 * rng.standard_normal((batch, dim, length))).astype(f),
        B=rng.standard_normal((batch, n, length)).astype(f),
        C=rng.standard_normal((batch, n, length)).astype(f),
        z=rng.standard_normal((batch, dim, length)).astype(f))


class ScanModule(tf.Module):
    """Weights A_log, D, delta_bias; u, delta, B, C, z with unknown batch and L."""

    def __init__(self, dim=6, n=4, seed=3):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.A_log = tf.Variable(rng.standard_normal((dim, n)).astype(np.float32) * 0.5)
        self.D = tf.Variable(rng.standard_normal(dim).astype(np.float32))
        self.bias = tf.Variable(rng.standard_normal(dim).astype(np.float32) * 0.3)

    @tf.function(input_signature=[tf.TensorSpec([None, 6, None], tf.float32)] * 2 +
                 [tf.TensorSpec([None, 4, None], tf.float32)] * 2 +
                 [tf.TensorSpec([None, 6, None], tf.float32)])
    def __call__(self, u, delta, B, C, z):
        return mvrt_tf.selective_scan(u, delta, -tf.exp(self.A_log), B, C, D=self.D, z=z,
                                      delta_bias=self.bias, delta_softplus=True,
                                      return_last_state=True)


def _eager(m, x):
    return mvrt_tf.selective_scan(x["u"], x["delta"], -tf.exp(m.A_log), x["B"], x["C"], D=m.D,
                                  z=x["z"], delta_bias=m.bias, delta_softplus=True,
                                  return_last_state=True)


def test_tf_function_unknown_batch_matches_eager(rng):
    m = ScanModule()
    concrete = m.__call__.get_concrete_function()
    out_spec, last_spec = concrete.structured_outputs
    assert out_spec.shape.as_list() == [None, 6, None]   # shape function: batch/L unknown
    assert last_spec.shape.as_list() == [None, 6, 4]
    for batch, length in ((1, 20), (3, 7), (2, 33)):
        x = _inputs(rng, batch, length=length)
        got = m(**x)
        want = _eager(m, x)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_gradient_tape_inside_tf_function(rng):
    m = ScanModule()
    spec3 = tf.TensorSpec([None, 6, None], tf.float32)

    @tf.function(input_signature=[spec3, spec3, tf.TensorSpec([None, 4, None], tf.float32),
                                  tf.TensorSpec([None, 4, None], tf.float32), spec3])
    def step(u, delta, B, C, z):
        with tf.GradientTape() as tape:
            tape.watch([u, delta, B, C, z])
            out, _ = mvrt_tf.selective_scan(u, delta, -tf.exp(m.A_log), B, C, D=m.D, z=z,
                                            delta_bias=m.bias, delta_softplus=True,
                                            return_last_state=True)
            loss = tf.reduce_sum(out * out)
        return tape.gradient(loss, [u, delta, B, C, z, m.A_log, m.D, m.bias])

    x = _inputs(rng, 3, length=11)
    got = step(**x)
    with tf.GradientTape() as tape:
        args = [tf.constant(x[k]) for k in ("u", "delta", "B", "C", "z")]
        tape.watch(args)
        out, _ = _eager(m, dict(zip(("u", "delta", "B", "C", "z"), args)))
        loss = tf.reduce_sum(out * out)
    want = tape.gradient(loss, args + [m.A_log, m.D, m.bias])
    for g, w in zip(got, want):
        assert g is not None
        assert float(tf.reduce_max(tf.abs(w))) > 0
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, atol=1e-6)


_RELOAD = r"""
import json, sys
import numpy as np
import mvrt_tf  # registers the ops before loading
import tensorflow as tf
path, inputs, outputs = sys.argv[1:4]
m = tf.saved_model.load(path)
x = np.load(inputs)
out, last = m(**{k: x[k] for k in ("u", "delta", "B", "C", "z")})
np.savez(outputs, out=out.numpy(), last=last.numpy())
"""


def test_saved_model_round_trip_fresh_process(tmp_path, rng):
    m = ScanModule()
    path = str(tmp_path / "scan_model")
    tf.saved_model.save(m, path)
    x = _inputs(rng, 2, length=15)
    np.savez(tmp_path / "in.npz", **x)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run([sys.executable, "-c", _RELOAD, path, str(tmp_path / "in.npz"),
                           str(tmp_path / "out.npz")], env=env, capture_output=True, text=True,
                          timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = np.load(tmp_path / "out.npz")
    want = m(**x)
    np.testing.assert_array_equal(got["out"], want[0].numpy())
    np.testing.assert_array_equal(got["last"], want[1].numpy())
