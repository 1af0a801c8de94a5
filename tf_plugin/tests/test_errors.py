"""Every invalid input raises tf.errors.InvalidArgumentError naming the
input: through selective_scan, through the raw op (the kernel's own checks),
and at run time inside a tf.function whose shapes are unknown at trace time."""
import numpy as np
import pytest
import tensorflow as tf

import mvrt_tf

B, D, L, N = 2, 4, 6, 3


def good(dtype=np.float32):
    rng = np.random.default_rng(0)
    return dict(u=rng.standard_normal((B, D, L)).astype(dtype),
                delta=rng.standard_normal((B, D, L)).astype(dtype),
                A=-np.ones((D, N), np.float32), B=rng.standard_normal((B, N, L)).astype(dtype),
                C=rng.standard_normal((B, N, L)).astype(dtype))


def call(**over):
    x = good()
    x.update(over)
    return mvrt_tf.selective_scan(x.pop("u"), x.pop("delta"), x.pop("A"), x.pop("B"),
                                  x.pop("C"), **x)


f32 = np.float32
CASES = {
    "u_rank": (dict(u=np.zeros((D, L), f32)), "u"),
    "delta_shape": (dict(delta=np.zeros((B, D, L + 1), f32)), "delta"),
    "A_dim": (dict(A=np.zeros((D + 1, N), f32)), "A"),
    "N_too_large": (dict(A=np.zeros((D, 257), f32), B=np.zeros((B, 257, L), f32),
                         C=np.zeros((B, 257, L), f32)), "N"),
    "B_length": (dict(B=np.zeros((B, N, L - 1), f32)), "B"),
    "C_batch": (dict(C=np.zeros((B + 1, N, L), f32)), "C"),
    "B_rank5": (dict(B=np.zeros((B, 1, 1, N, L), f32)), "B"),
    "groups_not_dividing": (dict(B=np.zeros((B, 3, N, L), f32)), "groups"),
    "groups_differ": (dict(B=np.zeros((B, 2, N, L), f32), C=np.zeros((B, 4, N, L), f32)),
                      "groups"),
    "const_B_shape": (dict(B=np.zeros((D, N + 1), f32)), "B"),
    "D_shape": (dict(D=np.zeros(D + 1, f32)), "D"),
    "z_shape": (dict(z=np.zeros((B, D, L - 2), f32)), "z"),
    "bias_shape": (dict(delta_bias=np.zeros((1, D), f32)), "delta_bias"),
    "delta_dtype": (dict(delta=np.zeros((B, D, L), np.float16)), "delta"),
    "A_dtype": (dict(A=np.zeros((D, N), np.float16)), "A"),
    "B_var_dtype": (dict(B=np.zeros((B, N, L), np.float64)), "B"),
    "B_const_dtype": (dict(B=np.zeros((D, N), np.float16)), "B"),
    "D_dtype": (dict(D=np.zeros(D, np.float16)), "D"),
    "u_int": (dict(u=np.zeros((B, D, L), np.int32)), "u"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_eager_invalid_argument(name):
    over, word = CASES[name]
    with pytest.raises(tf.errors.InvalidArgumentError, match=word):
        call(**over)


def test_valid_call_works():
    out = call(D=np.ones(D, f32), z=np.ones((B, D, L), f32), delta_bias=np.zeros(D, f32))
    assert out.shape == (B, D, L)


RAW_CASES = {
    # the kernel's own checks (the Python wrapper is bypassed)
    "A_double_with_float_u": (dict(a=np.zeros((D, N), np.float64),
                                   d=np.zeros(0, np.float64),
                                   delta_bias=np.zeros(0, np.float64)), "A"),
    "B_var_wrong_type": (dict(b=np.zeros((B, N, L), np.float16)), "B"),
    "D_given_but_flag_off": (dict(d=np.zeros(D, f32)), "D"),
    "has_D_but_empty": (dict(has_D=True), "D"),
    "groups": (dict(c=np.zeros((B, 3, N, L), f32)), "groups"),
    "N_zero": (dict(a=np.zeros((D, 0), f32), b=np.zeros((B, 0, L), f32),
                    c=np.zeros((B, 0, L), f32)), "N"),
}


@pytest.mark.parametrize("name", sorted(RAW_CASES))
def test_raw_op_invalid_argument(name):
    over, word = RAW_CASES[name]
    x = good()
    kw = dict(u=x["u"], delta=x["delta"], a=x["A"], b=x["B"], c=x["C"], d=np.zeros(0, f32),
              z=np.zeros(0, f32), delta_bias=np.zeros(0, f32))
    kw.update(over)
    # tensors, not numpy arrays: numpy inputs would be converted to the attrs' defaults
    kw = {k: tf.constant(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    with pytest.raises(tf.errors.InvalidArgumentError, match=word):
        mvrt_tf.raw_ops.mamba_selective_scan(**kw)


def test_raw_grad_op_checks_dout():
    x = good()
    with pytest.raises(tf.errors.InvalidArgumentError, match="dout"):
        mvrt_tf.raw_ops.mamba_selective_scan_grad(
            u=x["u"], delta=x["delta"], a=x["A"], b=x["B"], c=x["C"], d=np.zeros(0, f32),
            z=np.zeros(0, f32), delta_bias=np.zeros(0, f32), dout=np.zeros((B, D, L + 1), f32))


def test_runtime_mismatch_inside_tf_function():
    spec = tf.TensorSpec([None, D, None], tf.float32)
    bspec = tf.TensorSpec([None, N, None], tf.float32)

    @tf.function(input_signature=[spec, spec, bspec, bspec])
    def f(u, delta, Bv, Cv):
        return mvrt_tf.selective_scan(u, delta, -tf.ones((D, N)), Bv, Cv)

    x = good()
    f(x["u"], x["delta"], x["B"], x["C"])  # fine
    with pytest.raises(tf.errors.InvalidArgumentError, match="C"):
        f(x["u"], x["delta"], x["B"], np.zeros((B, N, L + 3), f32))


def test_empty_batch_and_length():
    x = good()
    out, last = mvrt_tf.selective_scan(x["u"][:0], x["delta"][:0], x["A"], x["B"][:0],
                                       x["C"][:0], return_last_state=True)
    assert out.shape == (0, D, L) and last.shape == (0, D, N)
    out, last = mvrt_tf.selective_scan(x["u"][..., :0], x["delta"][..., :0], x["A"],
                                       x["B"][..., :0], x["C"][..., :0], return_last_state=True)
    assert out.shape == (B, D, 0)
    np.testing.assert_array_equal(last.numpy(), np.zeros((B, D, N), f32))


def test_python_lists_take_the_expected_dtypes():
    x = good(np.float64)
    out = mvrt_tf.selective_scan(x["u"], x["delta"], [[-1.0] * N] * D, x["B"], x["C"],
                                 D=[1.0] * D, delta_bias=[0.0] * D)
    assert out.dtype == tf.float64
