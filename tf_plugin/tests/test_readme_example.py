"""The TensorFlow examples in tf_plugin/README.md, the top-level README.md
and docs/tensorflow.md run as written."""
import os
import re

import pytest

_HERE = os.path.dirname(os.path.abspath(__file__))
READMES = [os.path.join(_HERE, "..", "README.md"), os.path.join(_HERE, "..", "..", "README.md")]


@pytest.mark.parametrize("README", READMES, ids=["tf_plugin", "top-level"])
def test_readme_example_runs(README):
    if not os.path.exists(README):
        pytest.skip("README.md not shipped here")
    with open(README) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert blocks, "no python example in README.md"
    scope = {}
    exec(compile(blocks[0], "README.md example", "exec"), scope)
    assert scope["out"].shape == (2, 16, 49)
    assert scope["last_state"].shape == (2, 16, 8)
    assert all(g is not None for g in (scope["du"], scope["dA"], scope["dD"]))


def test_tensorflow_guide_examples_run():
    """docs/tensorflow.md: its python blocks, in order, in one scope."""
    guide = os.path.join(_HERE, "..", "..", "docs", "tensorflow.md")
    if not os.path.exists(guide):
        pytest.skip("docs/tensorflow.md not shipped here")
    with open(guide) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert len(blocks) >= 3, "docs/tensorflow.md lost its examples"
    scope = {}
    for i, block in enumerate(blocks):
        exec(compile(block, "docs/tensorflow.md example %d" % (i + 1), "exec"), scope)
    assert scope["out"].shape == (2, 16, 49)
    assert all(g is not None for g in (scope["du"], scope["dA"], scope["dD"]))
    assert scope["model"].output_shape == (None, 10)
    assert tuple(scope["logits"].shape) == (1, 1000)
