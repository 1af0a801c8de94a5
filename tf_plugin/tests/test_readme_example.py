"""The example in tf_plugin/README.md runs as written."""
import os
import re

import pytest

README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "README.md")


def test_readme_example_runs():
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
