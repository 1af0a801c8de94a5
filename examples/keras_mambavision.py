"""Train, save, reload and run a small Keras classifier built on MambaVision
blocks whose selective scan is mvrt's op (mvrt_tf).

    pip install "tensorflow-cpu==2.21.*" scikit-build-core
    pip install --no-build-isolation ./tf_plugin
    python examples/keras_mambavision.py

The data is synthetic: each sample is a sequence of 49 tokens (a 7x7 feature
map, flattened as MambaVision's hybrid stages see it) of 32 channels, and its
class (one of 4) decides a pattern added to the first 12 or the last 12
tokens, with or without a sign flip. Telling the two places apart needs the
token mixing of the block (a causal scan and a conv along the tokens): the
same model with per-token Dense layers instead of the blocks stays near 50 %.

Exit status: 0 when the model learned (held-out accuracy >= 0.9) and the
reloaded model predicts exactly as the trained one; 1 otherwise; 77 (a CTest
SKIP) when TensorFlow or the mvrt_tf package is not installed.
"""
import os
import sys
import tempfile

SKIP = 77
try:
    import numpy as np
    import tensorflow as tf
    import keras
except ImportError as e:
    print("SKIP: TensorFlow/Keras is not importable by %s: %s" % (sys.executable, e))
    sys.exit(SKIP)
try:
    import mvrt_tf
except ImportError as e:
    if os.environ.get("MVRT_TF_OPS_LIBRARY"):  # a build tree said where the library is
        raise
    print("SKIP: mvrt_tf is not installed (pip install ./tf_plugin): %s" % e)
    sys.exit(SKIP)

TOKENS, DIM, CLASSES = 49, 32, 4


def make_data(n, rng, pattern):
    """Class c: +-pattern (sign: c % 2) on the first (c < 2) or last 12 tokens."""
    y = rng.integers(0, CLASSES, n)
    x = rng.standard_normal((n, TOKENS, DIM)).astype(np.float32)
    for i, c in enumerate(y):
        part = slice(0, 12) if c < 2 else slice(TOKENS - 12, TOKENS)
        x[i, part] += (1.0 if c % 2 == 0 else -1.0) * pattern
    return x, y


def build_model():
    inputs = keras.Input((TOKENS, DIM))
    h = keras.layers.Dense(DIM)(inputs)
    h = mvrt_tf.MambaVisionBlock(DIM, d_state=8, layer_scale=None, seed=1)(h)
    h = mvrt_tf.MambaVisionBlock(DIM, d_state=8, layer_scale=None, seed=2)(h)
    h = keras.layers.LayerNormalization()(h)
    h = keras.layers.GlobalAveragePooling1D()(h)
    return keras.Model(inputs, keras.layers.Dense(CLASSES)(h))


def main():
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    pattern = 1.0 * rng.standard_normal(DIM).astype(np.float32)
    x_train, y_train = make_data(1024, rng, pattern)
    x_test, y_test = make_data(256, rng, pattern)

    model = build_model()
    # The op has no XLA kernel: the layers say so, and Keras' default
    # jit_compile="auto" then trains without XLA.
    model.compile(optimizer=keras.optimizers.Adam(3e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    history = model.fit(x_train, y_train, batch_size=64, epochs=8, verbose=0)
    losses = history.history["loss"]
    print("training loss per epoch: " + " ".join("%.3f" % v for v in losses))

    # Inference: predictions on held-out data, then the same from a reloaded
    # .keras file (the layers are registered Keras serializables).
    logits = model.predict(x_test, batch_size=128, verbose=0)
    accuracy = float(np.mean(np.argmax(logits, axis=1) == y_test))
    print("held-out accuracy: %.3f (chance: %.2f)" % (accuracy, 1.0 / CLASSES))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "mambavision_classifier.keras")
        model.save(path)
        reloaded = keras.models.load_model(path)
    same = np.array_equal(reloaded.predict(x_test, batch_size=128, verbose=0), logits)
    print("reloaded model predicts the same: %s" % same)

    ok = losses[-1] < 0.5 * losses[0] and accuracy >= 0.9 and same
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
