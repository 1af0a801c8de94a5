"""Shared fixtures of the mvrt_tf tests.

Two logical CPU devices are configured here, before TensorFlow initializes
its runtime, for the MirroredStrategy test. The op library is the one named
by MVRT_TF_OPS_LIBRARY (CTest points it at the build tree) or the one
installed next to the mvrt_tf package.
"""
import numpy as np
import pytest
import tensorflow as tf

_cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(
    _cpus[0], [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()])

import mvrt_tf  # noqa: E402  (after the device configuration)


@pytest.fixture(scope="session")
def rng():
    return np.random.default_rng(1234)
