"""Fine-tune a whole MambaVision (mvrt_tf.MambaVision) on a folder of images
with tf.data, using the official MambaVision evaluation preprocessing.

    python examples/keras_finetune_folder.py IMAGE_DIR --weights mambavision_t.safetensors
    python examples/keras_finetune_folder.py            # synthetic images (what CI runs)

IMAGE_DIR holds one sub-folder per class (JPEG, PNG, BMP or GIF files), as
keras.utils.image_dataset_from_directory reads it. --weights is a
.safetensors file under the PyTorch names (tools/convert_checkpoint.py
converts the official checkpoints); its ImageNet head is replaced by one for
the folder's classes. Without IMAGE_DIR the example writes a synthetic
two-class folder (horizontal or vertical stripes under noise) and exits 0
only when the model tells held-out images apart (accuracy >= 0.9), 1
otherwise, 77 (a CTest SKIP) without TensorFlow or mvrt_tf.

Preprocessing (timm's eval transform for MambaVision): resize the shorter
side to floor(size / 0.875) with bicubic filtering, centre crop size x
size, scale to [0, 1], normalize with the ImageNet mean (0.485, 0.456,
0.406) and std (0.229, 0.224, 0.225), NCHW.
"""
import argparse
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

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
CROP_PCT = 0.875


def preprocess(image, size):
    """uint8 (H, W, 3) -> float32 (3, size, size), the eval transform."""
    image = tf.cast(image, tf.float32)
    h, w = tf.shape(image)[0], tf.shape(image)[1]
    short = tf.cast(tf.math.floor(size / CROP_PCT), tf.int32)
    scale = tf.cast(short, tf.float32) / tf.cast(tf.minimum(h, w), tf.float32)
    new_h = tf.maximum(short, tf.cast(tf.round(tf.cast(h, tf.float32) * scale), tf.int32))
    new_w = tf.maximum(short, tf.cast(tf.round(tf.cast(w, tf.float32) * scale), tf.int32))
    image = tf.image.resize(image, [new_h, new_w], method="bicubic", antialias=True)
    top, left = (new_h - size) // 2, (new_w - size) // 2
    image = image[top:top + size, left:left + size, :]
    image = (tf.clip_by_value(image, 0.0, 255.0) / 255.0 - MEAN) / STD
    return tf.transpose(image, [2, 0, 1])


def folder_dataset(folder, size, batch, subset=None, seed=1):
    """(dataset, class names) of a class-per-sub-folder image folder."""
    ds = keras.utils.image_dataset_from_directory(
        folder, labels="inferred", label_mode="int", batch_size=None, image_size=(size * 2, size * 2),
        crop_to_aspect_ratio=True, shuffle=True, seed=seed, validation_split=0.25 if subset else None,
        subset=subset, verbose=False)
    names = ds.class_names
    ds = ds.map(lambda x, y: (preprocess(x, size), y), num_parallel_calls=tf.data.AUTOTUNE)
    return ds.batch(batch).prefetch(tf.data.AUTOTUNE), names


def write_synthetic_folder(root, per_class=48, side=80, seed=0):
    """Two classes of PNGs: horizontal or vertical stripes of random period
    and phase, under noise."""
    rng = np.random.default_rng(seed)
    for c, name in enumerate(("horizontal", "vertical")):
        os.makedirs(os.path.join(root, name), exist_ok=True)
        for i in range(per_class):
            period = rng.integers(6, 14)
            phase = rng.integers(0, period)
            line = ((np.arange(side) + phase) % period < period // 2).astype(np.float32)
            stripes = np.broadcast_to(line[:, None] if c == 0 else line[None, :], (side, side))
            colour = rng.uniform(0.3, 1.0, 3)
            img = 255 * (0.5 * stripes[..., None] * colour + 0.5 * rng.uniform(0, 1, (side, side, 3)))
            tf.io.write_file(os.path.join(root, name, "%03d.png" % i),
                             tf.io.encode_png(tf.constant(img.astype(np.uint8))))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", nargs="?", help="class-per-sub-folder images (default: synthetic)")
    ap.add_argument("--config", default="T", help="T, T2, S, B, L or L2 (default T)")
    ap.add_argument("--weights", help=".safetensors under the PyTorch names (default: fresh weights)")
    ap.add_argument("--image", type=int, default=224, help="crop size (default 224)")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-3)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        folder = args.folder
        if folder is None:
            folder = os.path.join(tmp, "images")
            write_synthetic_folder(folder)
        train, names = folder_dataset(folder, args.image, args.batch, subset="training")
        held_out, _ = folder_dataset(folder, args.image, args.batch, subset="validation")
        cfg = dict(mvrt_tf.model_config(args.config), num_classes=len(names))
        model = mvrt_tf.MambaVision(cfg, seed=0)
        if args.weights:
            # everything but the ImageNet head, which the folder's classes replace
            state, _ = mvrt_tf.load_safetensors(args.weights)
            state = {k: v for k, v in state.items() if not k.startswith("head.")}
            model.load_torch_weights(state, strict=False)
        model.compile(keras.optimizers.AdamW(args.lr),
                      keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
        model.fit(train, epochs=args.epochs, verbose=2)
        _, accuracy = model.evaluate(held_out, verbose=0)
        print("classes %s; held-out accuracy %.3f" % (names, accuracy))
        if args.folder is None:
            return 0 if accuracy >= 0.9 else 1
        return 0


if __name__ == "__main__":
    sys.exit(main())
