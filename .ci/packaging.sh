#!/usr/bin/env bash
# Packaging check (issue #7): what a user does with an installed mvrt.
#   1. cmake --install the build tree into a new prefix (a temporary folder);
#   2. build examples/ against that prefix as an outside project
#      (find_package(mvrt CONFIG)) and run them;
#   3. build the TensorFlow package against the prefix (MVRT_PREFIX,
#      scikit-build-core) as a wheel and check it: it requires the TensorFlow
#      minor it was built against, holds the op library and the Python code,
#      and neither libtensorflow_framework nor libmvrt (those belong to
#      TensorFlow and to the prefix);
#   4. pip install that wheel into the venv; check the op library's layout
#      (tf_plugin/tests/test_library.py) and run examples/keras_mambavision.py.
# The package already installed (in CI the bundled one: `pip install
# ./tf_plugin`, which .ci/run installs and tests just before) is checked for
# the same rules first, without a rebuild.
# On exit the prefix is deleted and the package built against it is
# uninstalled (it replaced the one installed before), so the venv never
# points at a missing prefix.
#
# usage: .ci/packaging.sh [BUILD_DIR]    (default: build; configured and
#        built first when it is not a CMake build tree)
# env:   MVRT_CI_VENV (the venv with TensorFlow; default /opt/mvrt-ci-venv),
#        JOBS (parallel build jobs; default nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
build=${1:-build}
venv=${MVRT_CI_VENV:-/opt/mvrt-ci-venv}
py="$venv/bin/python"
jobs=${JOBS:-$(nproc)}
start=$(date +%s)
stamp() { echo "== packaging [$(( $(date +%s) - start )) s] $*"; }
fail() { echo "packaging: FAIL: $*" >&2; exit 1; }

[ -x "$py" ] || fail "no python in $venv (MVRT_CI_VENV): create it as .ci/run does"
"$py" -c "import tensorflow" 2>/dev/null || fail "$py cannot import tensorflow"
unset MVRT_TF_OPS_LIBRARY MVRT_BACKEND_PATH   # test what is installed, nothing else
export TF_CPP_MIN_LOG_LEVEL=2

work=$(mktemp -d "${TMPDIR:-/tmp}/mvrt-packaging.XXXXXX")
installed_ours=0
cleanup() {
  if [ "$installed_ours" = 1 ]; then
    "$py" -m pip uninstall -q -y mvrt-tf || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
prefix=$work/prefix

# The wheel rules, on a wheel file or on the installed distribution.
check_package() {  # check_package <wheel file | --installed> <layout: bundled | prefix | auto>
  "$py" - "$@" <<'EOF'
import importlib.metadata as md, re, sys, zipfile
import tensorflow as tf
what, expect = sys.argv[1], sys.argv[2]
if what == "--installed":
    dist = md.distribution("mvrt-tf")
    files = [str(f) for f in dist.files or []]
    requires = dist.requires or []
else:
    z = zipfile.ZipFile(what)
    files = z.namelist()
    meta = next(n for n in files if n.endswith(".dist-info/METADATA"))
    requires = [l.split(":", 1)[1].strip() for l in z.read(meta).decode().splitlines()
                if l.startswith("Requires-Dist:")]
minor = ".".join(tf.__version__.split(".")[:2])
problems = []
if not any(f.endswith("mvrt_tf/libmvrt_tf_ops.so") for f in files):
    problems.append("no mvrt_tf/libmvrt_tf_ops.so")
if [f for f in files if "libtensorflow_framework" in f]:
    problems.append("bundles libtensorflow_framework")
bundled = [f for f in files if re.search(r"/libmvrt(_backend_[a-z]+)?\.so", f)]
if expect == "auto":  # whichever layout it has, consistently
    expect = "bundled" if bundled else "prefix"
if expect == "bundled" and not any("libmvrt_backend_cpu.so" in f for f in bundled):
    problems.append("bundled layout without libmvrt_backend_cpu.so")
if expect == "prefix" and bundled:
    problems.append("built against a prefix but bundles %s" % bundled)
pins = [r for r in requires if re.fullmatch(r"tensorflow[-a-z]*==%s\.\*" % re.escape(minor), r)]
if not pins:
    problems.append("does not pin TensorFlow %s.* (requires: %s)" % (minor, requires))
if problems:
    sys.exit("mvrt-tf (%s): %s" % (what, "; ".join(problems)))
print("mvrt-tf (%s): %d files, requires %s, no libtensorflow_framework, layout %s: OK"
      % (what if what == "--installed" else what.rsplit("/", 1)[-1], len(files),
         ", ".join(requires), expect))
EOF
}

if "$py" -m pip show -q mvrt-tf >/dev/null 2>&1; then
  stamp "the mvrt-tf package already installed (by .ci/run: the bundled one)"
  check_package --installed auto
fi

stamp "cmake --install $build -> $prefix"
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release
fi
cmake --build "$build" -j "$jobs" >/dev/null
cmake --install "$build" --prefix "$prefix" >/dev/null
"$prefix/bin/mvrt" info

stamp "examples/ built against the installed prefix (find_package(mvrt CONFIG)) and run"
cmake -S examples -B "$work/examples" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/examples" -j "$jobs" >/dev/null
ctest --test-dir "$work/examples" --output-on-failure
"$work/examples/example_scan_forward"

stamp "TensorFlow package against the installed prefix: MVRT_PREFIX=$prefix pip wheel ./tf_plugin"
MVRT_PREFIX="$prefix" "$py" -m pip wheel -q --no-build-isolation --no-deps \
  -w "$work/wheels" ./tf_plugin
wheel=$(ls "$work"/wheels/mvrt_tf-*.whl)
check_package "$wheel" prefix
version=$(sed -n 's/^#define MVRT_VERSION_[A-Z]* \([0-9]*\)$/\1/p' include/mvrt/core.h | paste -sd.)
case "$wheel" in
  */mvrt_tf-"$version"-*) echo "wheel version $version = include/mvrt/core.h" ;;
  *) fail "wheel $wheel does not carry mvrt's version $version (include/mvrt/core.h)" ;;
esac

stamp "pip install the wheel, then its layout and examples/keras_mambavision.py with it"
"$py" -m pip uninstall -q -y mvrt-tf 2>/dev/null || true
installed_ours=1
"$py" -m pip install -q --no-build-isolation "$wheel"   # its requirements: already installed
(cd "$work" && "$py" "$repo/tf_plugin/tests/run_tests.py" -q -p no:warnings \
   "$repo/tf_plugin/tests/test_library.py")
(cd "$work" && "$py" "$repo/examples/keras_mambavision.py") | tee "$work/keras.log"
grep -q '^PASS$' "$work/keras.log" || fail "examples/keras_mambavision.py did not PASS"

stamp "packaging done"
