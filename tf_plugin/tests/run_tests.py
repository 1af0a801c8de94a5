"""CTest entry point: runs pytest on this folder, or exits 77 (CTest SKIP)
when tensorflow or pytest is not importable by this interpreter."""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
SKIP = 77

if os.environ.get("MVRT_TF_NOT_BUILT"):
    print("SKIP: the TensorFlow op library was not built: %s" % os.environ["MVRT_TF_NOT_BUILT"])
    sys.exit(SKIP)

try:
    import pytest
except ImportError:
    print("SKIP: pytest is not installed for %s" % sys.executable)
    sys.exit(SKIP)
try:
    import tensorflow  # noqa: F401
except ImportError as e:
    print("SKIP: tensorflow is not importable by %s: %s" % (sys.executable, e))
    sys.exit(SKIP)

sys.exit(pytest.main(sys.argv[1:] + ["-p", "no:cacheprovider"]))
