"""Helpers shared by the mvrt_tf tests: golden files and comparisons."""
import glob
import json
import os

import numpy as np

import mvrt_tf

HERE = os.path.dirname(os.path.abspath(__file__))


def golden_dir():
    path = os.environ.get("MVRT_GOLDEN_DIR") or os.path.join(HERE, "..", "..", "..", "shared",
                                                              "golden")
    return os.path.abspath(path)


def golden_files(pattern):
    """Every golden file matching pattern (any file of the format counts)."""
    return sorted(glob.glob(os.path.join(golden_dir(), pattern)))


def golden_entries(path, kind):
    """(name, config dict, tensors) of every entry of a golden file whose
    metadata JSON has this "kind" ("mixer", "model", ...) and an input."""
    tensors, meta = mvrt_tf.load_safetensors(path)
    for name, value in meta.items():
        try:
            cfg = json.loads(value)
        except ValueError:
            continue
        if isinstance(cfg, dict) and cfg.get("kind") == kind and name + ".input" in tensors:
            yield name, cfg, tensors


def assert_close(actual, expected, rtol, atol, what):
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape, "%s: shape %s != %s" % (what, actual.shape,
                                                                   expected.shape)
    err = np.abs(actual - expected)
    bound = atol + rtol * np.abs(expected)
    bad = err > bound
    assert np.all(np.isfinite(actual)), "%s: non-finite values" % what
    if bad.any():
        i = np.unravel_index(np.argmax(err - bound), err.shape)
        raise AssertionError("%s: %d of %d elements out of tolerance (rtol %g, atol %g); worst "
                             "at %s: got %r, expected %r" % (what, bad.sum(), bad.size, rtol,
                                                             atol, i, actual[i], expected[i]))


def scan_cases(path):
    """Yields (index, config dict, tensors dict) for every case of a
    scan_cases-format file."""
    tensors, meta = mvrt_tf.load_safetensors(path)
    for i in range(int(meta["cases"])):
        cfg = json.loads(meta["case%d" % i])
        prefix = "case%d." % i
        case = {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}
        yield i, cfg, case
