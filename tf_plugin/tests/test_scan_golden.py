"""Forward and every gradient against golden scan files (float64 results of
mamba_ssm's reference), in float32; and float16/bfloat16 against the float64
path of the op on the same rounded inputs. Tolerances: shared spec
(fp32 rtol 6e-4 / atol 2e-3, fp16 3e-3 / 5e-3, bf16 3e-2 / 5e-2; gradients
5x looser, ddelta and dA 10x)."""
import os

import numpy as np
import pytest
import tensorflow as tf

import mvrt_tf
from tf_test_utils import assert_close, golden_files, scan_cases

TOL = {tf.float32: (6e-4, 2e-3), tf.float16: (3e-3, 5e-3), tf.bfloat16: (3e-2, 5e-2)}
GRAD_FACTOR = {"ddelta": 10, "dA": 10}
INPUTS = ("u", "delta", "A", "B", "C", "D", "z", "delta_bias")


def _files():
    explicit = os.environ.get("MVRT_TF_SCAN_GOLDEN")
    return explicit.split(os.pathsep) if explicit else golden_files("scan*.safetensors")


def _params():
    params = []
    for path in _files():
        for i, cfg, case in scan_cases(path):
            params.append(pytest.param(cfg, case, id="%s-case%d" % (os.path.basename(path), i)))
    return params


CASES = _params()


def run_scan(case, cfg, dtype):
    """out, last_state and the gradients of sum(out * dout) for each input."""
    state_type = tf.float64 if dtype == tf.float64 else tf.float32
    vals = {}
    for name in INPUTS:
        if name not in case:
            continue
        value = case[name]
        low = name in ("u", "delta", "z") or (name == "B" and cfg["variable_B"]) \
            or (name == "C" and cfg["variable_C"])
        vals[name] = tf.constant(value, dtype=dtype if low else state_type)
    dout = tf.constant(case["dout"], dtype=dtype)
    with tf.GradientTape() as tape:
        tape.watch(list(vals.values()))
        out, last = mvrt_tf.selective_scan(
            vals["u"], vals["delta"], vals["A"], vals["B"], vals["C"], D=vals.get("D"),
            z=vals.get("z"), delta_bias=vals.get("delta_bias"),
            delta_softplus=cfg["delta_softplus"], return_last_state=True)
    grads = tape.gradient(out, vals, output_gradients=dout)
    result = {"out": out, "last_state": last}
    result.update({"d" + k: g for k, g in grads.items()})
    return result


def _rounded(case, cfg, dtype):
    """The case with its low-precision operands rounded to dtype."""
    rounded = dict(case)
    for name in ("u", "delta", "z", "dout") + (("B",) if cfg["variable_B"] else ()) + \
            (("C",) if cfg["variable_C"] else ()):
        if name in case:
            rounded[name] = tf.cast(tf.cast(case[name], dtype), tf.float64).numpy()
    return rounded


@pytest.mark.skipif(not CASES, reason="no scan golden file found")
@pytest.mark.parametrize("cfg,case", CASES)
def test_float32_matches_golden(cfg, case):
    got = run_scan(case, cfg, tf.float32)
    rtol, atol = TOL[tf.float32]
    for name, value in got.items():
        assert name in case, "golden file lacks %s" % name
        f = 1 if name in ("out", "last_state") else GRAD_FACTOR.get(name, 5)
        assert value.dtype == (tf.float32), name
        assert_close(value.numpy(), case[name], f * rtol, f * atol, name)
    # every gradient the golden file has was produced
    for name in ("du", "ddelta", "dA", "dB", "dC", "dD", "dz", "ddelta_bias"):
        assert (name in case) == (name in got), name


@pytest.mark.skipif(not CASES, reason="no scan golden file found")
@pytest.mark.parametrize("cfg,case", CASES)
def test_float64_path_matches_golden(cfg, case):
    # The float64 kernels (used by the finite-difference checks) are the
    # double-precision reference: they must match the golden data closely.
    got = run_scan(case, cfg, tf.float64)
    for name, value in got.items():
        assert_close(value.numpy(), case[name], 1e-5, 1e-5, name)


@pytest.mark.skipif(not CASES, reason="no scan golden file found")
@pytest.mark.parametrize("dtype", [tf.float16, tf.bfloat16], ids=["f16", "bf16"])
@pytest.mark.parametrize("cfg,case", CASES[:3] + [c for c in CASES if "case5" in c.id][:1])
def test_low_precision(cfg, case, dtype):
    rounded = _rounded(case, cfg, dtype)
    want = run_scan(rounded, cfg, tf.float64)
    got = run_scan(rounded, cfg, dtype)
    rtol, atol = TOL[dtype]
    for name, value in got.items():
        f = 1 if name in ("out", "last_state") else GRAD_FACTOR.get(name, 5)
        expected_type = dtype if name in ("out", "du", "ddelta", "dz") or \
            (name == "dB" and cfg["variable_B"]) or (name == "dC" and cfg["variable_C"]) \
            else tf.float32
        assert value.dtype == expected_type, (name, value.dtype)
        assert_close(value.numpy(), want[name].numpy(), f * rtol, f * atol, name)
