"""Keras fit of a small MambaVision with keras.callbacks.BackupAndRestore
(one process). Prints each epoch's loss ("LOSS epoch value") and, at the
end, the sum of the trained variables ("SUM value"). With CRASH_AFTER=k the
process exits abruptly at the end of epoch k (after the callback saved it).

Usage: backup_restore_fit.py EPOCHS BACKUP_DIR [CRASH_AFTER]
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

import mvrt_tf  # noqa: E402

CONFIG = dict(dim=16, in_dim=8, depths=[1, 1, 2, 1], window_size=[4, 4, 4, 2], num_heads=[1, 2, 2, 4],
              num_classes=6, mlp_ratio=2)


class _Crash(keras.callbacks.Callback):
    def __init__(self, epoch):
        super().__init__()
        self.epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        print("LOSS %d %r" % (epoch, float(logs["loss"])), flush=True)
        if epoch == self.epoch:
            os._exit(3)


def main():
    epochs, backup = int(sys.argv[1]), sys.argv[2]
    crash_after = int(sys.argv[3]) if len(sys.argv) > 3 else -1
    rng = np.random.default_rng(2024)
    x = rng.standard_normal((24, 3, 32, 32)).astype(np.float32)
    y = rng.integers(0, CONFIG["num_classes"], 24).astype(np.int32)
    model = mvrt_tf.MambaVision(CONFIG, seed=7)
    model.compile(keras.optimizers.SGD(0.05), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(8)
    # the crash check runs after BackupAndRestore has saved the epoch
    model.fit(data, epochs=epochs, verbose=0,
              callbacks=[keras.callbacks.BackupAndRestore(backup), _Crash(crash_after)])
    print("SUM %r" % float(sum(np.sum(v.numpy(), dtype=np.float64) for v in model.variables)), flush=True)


if __name__ == "__main__":
    main()
