"""Trains a small MambaVision for a few steps and prints the losses as JSON
(one line, "LOSSES [...]"). Run by test_multiworker.py: as one of the
workers of tf.distribute.MultiWorkerMirroredStrategy when TF_CONFIG is set,
or alone without a strategy (the reference) otherwise.

Every step takes the same global batch of synthetic images: worker i the
i-th slice of it, the single process all of it. The update is plain SGD on
gradients summed over the workers (loss = sum of per-example losses /
global batch), so both runs apply the same update up to the order of the
floating-point sums.

With CHECKPOINT_DIR it saves the variables and the step count after every
step (the chief into CHECKPOINT_DIR, other workers into a private folder
below it, as TF_CONFIG jobs do) and, started again, resumes from the
chief's latest checkpoint. CRASH_AFTER=k makes worker 1 (or the single
process) exit abruptly right after saving step k, like a killed machine.
Each step's loss is printed as it is known ("LOSS step value").

Usage: multiworker_train.py STEPS GLOBAL_BATCH [CHECKPOINT_DIR [CRASH_AFTER]]
"""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

import mvrt_tf  # noqa: E402

CONFIG = dict(dim=16, in_dim=8, depths=[1, 1, 2, 1], window_size=[4, 4, 4, 2], num_heads=[1, 2, 2, 4],
              num_classes=6, mlp_ratio=2)
LEARNING_RATE = 0.05


def main():
    steps, global_batch = int(sys.argv[1]), int(sys.argv[2])
    ckpt_dir = sys.argv[3] if len(sys.argv) > 3 else None
    crash_after = int(sys.argv[4]) if len(sys.argv) > 4 else -1
    rng = np.random.default_rng(2024)
    images = rng.standard_normal((steps * global_batch, 3, 32, 32)).astype(np.float32)
    labels = rng.integers(0, CONFIG["num_classes"], steps * global_batch).astype(np.int32)

    if os.environ.get("TF_CONFIG"):
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
        task = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
    else:
        strategy = tf.distribute.get_strategy()  # the default: one replica
        task = 0
    workers = strategy.num_replicas_in_sync
    if global_batch % workers:
        raise SystemExit("the global batch must split evenly over %d workers" % workers)
    local = global_batch // workers

    with strategy.scope():
        model = mvrt_tf.MambaVision(CONFIG, seed=7)
    variables = model.trainable_variables

    def replica_step(x, y):
        with tf.GradientTape() as tape:
            logits = model(x)
            per_example = keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)
            loss = tf.reduce_sum(per_example) / global_batch
        grads = tape.gradient(loss, variables)
        ctx = tf.distribute.get_replica_context()
        if ctx.num_replicas_in_sync > 1:
            grads = ctx.all_reduce("sum", grads)
        for v, g in zip(variables, grads):
            v.assign_sub(LEARNING_RATE * g)
        return loss

    @tf.function
    def train_step(x, y):
        per_replica = strategy.run(replica_step, args=(x, y))
        return strategy.reduce("sum", per_replica, axis=None)

    done = tf.Variable(0, dtype=tf.int64, trainable=False)
    manager = None
    if ckpt_dir:
        ckpt = tf.train.Checkpoint(step=done, variables=[v.value for v in model.variables])
        latest = tf.train.latest_checkpoint(ckpt_dir)  # the chief's
        if latest:
            ckpt.restore(latest).assert_existing_objects_matched()
        write_dir = ckpt_dir if task == 0 else os.path.join(ckpt_dir, "worker_%d" % task)
        manager = tf.train.CheckpointManager(ckpt, write_dir, max_to_keep=1)

    losses = []
    for step in range(int(done.numpy()), steps):
        begin = step * global_batch + task * local
        loss = float(train_step(tf.constant(images[begin:begin + local]), tf.constant(labels[begin:begin + local])))
        losses.append(loss)
        print("LOSS %d %r" % (step, loss), flush=True)
        done.assign(step + 1)
        if manager:
            manager.save()
        if step == crash_after and task == (1 if workers > 1 else 0):
            os._exit(3)
    print("LOSSES " + json.dumps(losses), flush=True)


if __name__ == "__main__":
    main()
