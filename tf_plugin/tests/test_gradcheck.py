"""tf.test.compute_gradient finite differences in float64 (the op's float64
CPU kernels), and the float32 kernels' gradients (the real mvrt CPU backend)
against the finite-difference-checked float64 ones on random inputs."""
import numpy as np
import pytest
import tensorflow as tf

import mvrt_tf
from tf_test_utils import assert_close

# (batch, dim, L, N, groups, variable_B, variable_C, has_D, has_z, has_bias, softplus)
CONFIGS = {
    "full": (2, 4, 5, 3, 1, True, True, True, True, True, True),
    "groups2": (2, 4, 4, 2, 2, True, True, True, False, True, True),
    "constBC_plain": (1, 3, 6, 2, 1, False, False, False, False, False, False),
    "constB_z": (2, 2, 3, 3, 1, False, True, True, True, False, True),
    "L1": (2, 3, 1, 2, 1, True, True, True, True, True, True),
}
NAMES = ("u", "delta", "A", "B", "C", "D", "z", "delta_bias")


def make_inputs(cfg, rng, dtype=np.float64):
    b, d, l, n, g, vb, vc, has_d, has_z, has_bias, _ = cfg
    bc_shape = (b, n, l) if g == 1 else (b, g, n, l)
    x = {
        "u": rng.standard_normal((b, d, l)),
        "delta": 0.5 * rng.standard_normal((b, d, l)),
        "A": -np.exp(0.5 * rng.standard_normal((d, n))),
        "B": rng.standard_normal(bc_shape if vb else (d, n)),
        "C": rng.standard_normal(bc_shape if vc else (d, n)),
    }
    if has_d:
        x["D"] = rng.standard_normal(d)
    if has_z:
        x["z"] = rng.standard_normal((b, d, l))
    if has_bias:
        x["delta_bias"] = 0.3 * rng.standard_normal(d)
    return {k: v.astype(dtype) for k, v in x.items()}


def scan_fn(cfg, names):
    softplus = cfg[-1]

    def f(*args):
        kw = dict(zip(names, args))
        return mvrt_tf.selective_scan(kw["u"], kw["delta"], kw["A"], kw["B"], kw["C"],
                                      D=kw.get("D"), z=kw.get("z"),
                                      delta_bias=kw.get("delta_bias"), delta_softplus=softplus)
    return f


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_compute_gradient_float64(name):
    cfg = CONFIGS[name]
    x = make_inputs(cfg, np.random.default_rng(7))
    names = [k for k in NAMES if k in x]
    theoretical, numerical = tf.test.compute_gradient(
        scan_fn(cfg, names), [tf.constant(x[k]) for k in names], delta=1e-6)
    for k, t, nm in zip(names, theoretical, numerical):
        assert np.abs(t).max() > 0 or np.abs(nm).max() == 0, k
        assert_close(t, nm, 1e-5, 1e-6, "d%s (%s)" % (k, name))


@pytest.mark.parametrize("name", ["full", "groups2", "constB_z"])
def test_float32_gradients_match_float64(name):
    cfg = CONFIGS[name]
    # larger shapes than the finite-difference check: L crosses 64
    b, d, _, n, g = cfg[:5]
    cfg = (b, 2 * d, 97, 4 * n, g) + cfg[5:]
    rng = np.random.default_rng(11)
    x64 = make_inputs(cfg, rng)
    dout = rng.standard_normal((cfg[0], cfg[1], cfg[2]))
    names = [k for k in NAMES if k in x64]
    results = {}
    for dtype in (tf.float64, tf.float32):
        args = [tf.constant(x64[k], dtype=dtype) for k in names]
        with tf.GradientTape() as tape:
            tape.watch(args)
            out = scan_fn(cfg, names)(*args)
        results[dtype] = [out] + tape.gradient(out, args,
                                               output_gradients=tf.constant(dout, dtype))
    for label, got, want in zip(["out"] + ["d" + k for k in names], results[tf.float32],
                                results[tf.float64]):
        f = 1 if label == "out" else (10 if label in ("ddelta", "dA") else 5)
        assert got.dtype == tf.float32
        assert_close(got.numpy(), want.numpy(), f * 6e-4, f * 2e-3, label)


# 16-bit inputs (mixed precision): u, delta, z and variable B / C in
# float16 / bfloat16, A, D, delta_bias and a constant B / C float32 (the
# op's Tw), the state and sums float32
# inside. Compared with the float64 op on the same (rounded) values, so
# what is measured is the op's 16-bit path, not the rounding of its inputs.
# Tolerance per dtype: |d| <= k (RMS(ref) + |ref|) with k = 8 unit
# roundoffs of the dtype's outputs (2^-11 float16, 2^-8 bfloat16): every
# 16-bit output is one rounding of an fp32 value that sums O(L) terms.
UNIT_ROUNDOFF = {tf.float16: 2.0 ** -11, tf.bfloat16: 2.0 ** -8}


@pytest.mark.parametrize("dtype", [tf.float16, tf.bfloat16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["full", "constB_z"])
def test_16bit_gradients_match_float64(name, dtype):
    cfg = CONFIGS[name]
    b, d, _, n, g = cfg[:5]
    cfg = (b, 2 * d, 97, 4 * n, g) + cfg[5:]
    rng = np.random.default_rng(5)
    x = make_inputs(cfg, rng)
    names = [k for k in NAMES if k in x]
    sixteen = {"u", "delta", "z"} | ({"B"} if cfg[5] else set()) | ({"C"} if cfg[6] else set())
    # the 16-bit values, and the same values in float64 / float32
    args16 = [tf.constant(x[k], dtype=dtype if k in sixteen else tf.float32) for k in names]
    args64 = [tf.cast(a, tf.float64) for a in args16]
    dout = tf.cast(tf.constant(rng.standard_normal((cfg[0], cfg[1], cfg[2]))), dtype)
    results = {}
    for label, args, dt in (("16", args16, dtype), ("64", args64, tf.float64)):
        with tf.GradientTape() as tape:
            tape.watch(args)
            out = scan_fn(cfg, names)(*args)
        results[label] = [out] + tape.gradient(out, args, output_gradients=tf.cast(dout, dt))
    k = 8 * UNIT_ROUNDOFF[dtype]
    for label, got, want in zip(["out"] + ["d" + v for v in names], results["16"], results["64"]):
        assert got.dtype == (dtype if label == "out" or label[1:] in sixteen else tf.float32), label
        got = tf.cast(got, tf.float64).numpy()
        want = want.numpy()
        assert np.all(np.isfinite(got)), label
        rms = float(np.sqrt(np.mean(want * want)))
        assert rms > 0, label
        assert_close(got, want, k, k * rms, "%s %s (%s)" % (label, dtype.name, name))
