"""tf.distribute.MirroredStrategy over two logical CPU devices (configured in
conftest.py): one training step with the op gives the same variables as the
same step without the strategy."""
import numpy as np
import tensorflow as tf

import mvrt_tf

DIM, N, L, BATCH = 8, 4, 24, 4


def _data(seed=5):
    rng = np.random.default_rng(seed)
    f = np.float32
    return (rng.standard_normal((BATCH, DIM, L)).astype(f),
            (0.5 * rng.standard_normal((BATCH, DIM, L))).astype(f),
            rng.standard_normal((BATCH, N, L)).astype(f),
            rng.standard_normal((BATCH, N, L)).astype(f),
            rng.standard_normal((BATCH, DIM, L)).astype(f))


def _init_values():
    rng = np.random.default_rng(9)
    return dict(A_log=(0.5 * rng.standard_normal((DIM, N))).astype(np.float32),
                D=rng.standard_normal(DIM).astype(np.float32),
                bias=(0.3 * rng.standard_normal(DIM)).astype(np.float32),
                w=(0.2 * rng.standard_normal((DIM, DIM))).astype(np.float32))


def _make_vars():
    return {k: tf.Variable(v, name=k) for k, v in _init_values().items()}


def _per_example_loss(v, u, delta, B, C, target):
    # u is mixed by a trainable matrix first so that du flows into a variable too
    u = tf.einsum("ed,bdl->bel", v["w"], u)
    out = mvrt_tf.selective_scan(u, delta, -tf.exp(v["A_log"]), B, C, D=v["D"],
                                 delta_bias=v["bias"], delta_softplus=True)
    return tf.reduce_mean(tf.square(out - target), axis=[1, 2])


def _apply(v, grads, lr=0.1):
    for k in sorted(v):
        v[k].assign_sub(lr * grads[k])


def test_mirrored_step_matches_single_device():
    devices = [d.name for d in tf.config.list_logical_devices("CPU")]
    assert len(devices) >= 2, devices
    data = _data()

    # Without the strategy: one step on the whole batch.
    ref = _make_vars()
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(_per_example_loss(ref, *data)) / BATCH
    grads = tape.gradient(loss, ref)
    assert all(float(tf.reduce_max(tf.abs(g))) > 0 for g in grads.values())
    _apply(ref, grads)

    strategy = tf.distribute.MirroredStrategy(devices[:2])
    assert strategy.num_replicas_in_sync == 2
    with strategy.scope():
        mv = _make_vars()
    dataset = tf.data.Dataset.from_tensor_slices(data).batch(BATCH)
    dist = strategy.experimental_distribute_dataset(dataset)

    @tf.function
    def step(batch):
        def replica_fn(*batch):
            with tf.GradientTape() as tape:
                per_example = _per_example_loss(mv, *batch)
                loss = tf.nn.compute_average_loss(per_example, global_batch_size=BATCH)
            g = tape.gradient(loss, mv)
            g = tf.distribute.get_replica_context().all_reduce("sum", g)
            _apply(mv, g)
            return loss
        losses = strategy.run(replica_fn, args=batch)
        return strategy.reduce("sum", losses, axis=None)

    dist_loss = step(next(iter(dist)))
    np.testing.assert_allclose(float(dist_loss), float(loss), rtol=1e-5)
    for k in sorted(ref):
        moved = np.abs(ref[k].numpy() - _init_values()[k]).max()
        assert moved > 0, k
        np.testing.assert_allclose(mv[k].numpy(), ref[k].numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=k)
