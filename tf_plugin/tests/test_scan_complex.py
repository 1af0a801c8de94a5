"""Complex A through the TF op: forward, last_state and every gradient of
sum(out * dout) against the golden complex-A files (mamba_ssm's
selective_scan_ref with a complex A, float64 results), float32 inputs,
on the CPU. Complex tensors of the files have a trailing (re, im) axis;
here they become complex64. Tolerances: the float32 ones of
test_scan_golden (spec: rtol 6e-4 / atol 2e-3, gradients 5x looser,
ddelta and dA 10x)."""
import os

import numpy as np
import pytest
import tensorflow as tf

import mvrt_tf
from tf_test_utils import assert_close, golden_files, scan_cases

RTOL, ATOL = 6e-4, 2e-3
GRAD_FACTOR = {"ddelta": 10, "dA": 10}
INPUTS = ("u", "delta", "A", "B", "C", "D", "z", "delta_bias")


def _files():
    explicit = os.environ.get("MVRT_TF_COMPLEX_GOLDEN")
    return explicit.split(os.pathsep) if explicit else golden_files("complex*.safetensors")


CASES = [pytest.param(cfg, case, id="%s-case%d" % (os.path.basename(path), i))
         for path in _files() for i, cfg, case in scan_cases(path) if cfg.get("complex")]


def _is_complex(name, cfg):
    return name in ("A", "last_state", "dA") or \
        (name in ("B", "dB") and not cfg["variable_B"]) or \
        (name in ("C", "dC") and not cfg["variable_C"])


def _to_tf(value, complex_):
    if complex_:
        value = np.asarray(value, dtype=np.float64)
        return tf.complex(tf.constant(value[..., 0], tf.float32), tf.constant(value[..., 1], tf.float32))
    return tf.constant(value, tf.float32)


def _to_pairs(t):
    t = t.numpy()
    return np.stack([t.real, t.imag], axis=-1) if np.iscomplexobj(t) else t


def run_complex(case, cfg):
    vals = {name: _to_tf(case[name], _is_complex(name, cfg)) for name in INPUTS if name in case}
    with tf.device("/CPU:0"), tf.GradientTape() as tape:
        tape.watch(list(vals.values()))
        out, last = mvrt_tf.selective_scan(
            vals["u"], vals["delta"], vals["A"], vals["B"], vals["C"], D=vals.get("D"),
            z=vals.get("z"), delta_bias=vals.get("delta_bias"),
            delta_softplus=cfg["delta_softplus"], return_last_state=True)
    grads = tape.gradient(out, vals, output_gradients=tf.constant(case["dout"], tf.float32))
    result = {"out": out, "last_state": last}
    result.update({"d" + k: g for k, g in grads.items()})
    return result


@pytest.mark.skipif(not CASES, reason="no complex-A golden file found")
@pytest.mark.parametrize("cfg,case", CASES)
def test_complex_a_matches_golden(cfg, case):
    got = run_complex(case, cfg)
    assert got["last_state"].dtype == tf.complex64
    assert got["dA"].dtype == tf.complex64
    for name, value in got.items():
        assert name in case, "golden file lacks %s" % name
        f = 1 if name in ("out", "last_state") else GRAD_FACTOR.get(name, 5)
        assert_close(_to_pairs(value), case[name], f * RTOL, f * ATOL, name)


@pytest.mark.skipif(not CASES, reason="no complex-A golden file found")
def test_complex_a_refuses_half_inputs():
    cfg, case = CASES[0].values
    with pytest.raises(tf.errors.UnimplementedError, match="float32 u only"):
        mvrt_tf.selective_scan(
            tf.constant(case["u"], tf.float16), tf.constant(case["delta"], tf.float16),
            _to_tf(case["A"], True), tf.constant(case["B"], tf.float16),
            tf.constant(case["C"], tf.float16))


@pytest.mark.skipif(not CASES, reason="no complex-A golden file found")
def test_complex_a_variable_b_needs_2l_steps():
    cfg, case = next(p.values for p in CASES if p.values[0]["variable_B"])
    steps = np.asarray(case["B"])[..., : case["u"].shape[-1]]  # L instead of 2L
    with pytest.raises((tf.errors.InvalidArgumentError, ValueError), match="2L|2 x|Dimensions"):
        mvrt_tf.selective_scan(
            tf.constant(case["u"], tf.float32), tf.constant(case["delta"], tf.float32),
            _to_tf(case["A"], True), tf.constant(steps, tf.float32),
            tf.constant(case["C"], tf.float32))
