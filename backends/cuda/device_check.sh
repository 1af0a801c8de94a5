#!/bin/bash
# One-call check of the CUDA backend on a GPU machine: configure + build for
# the local GPU only, scan tests, benchmark (default path, row-tile variants,
# f16/bf16), ctest -L cuda (conformance + golden + random incl. the general
# kernels via the TPR variants), compute-sanitizer memcheck and racecheck on
# small scan cases, then the 64-bit test. Logs go to $OUT.
# usage: backends/cuda/device_check.sh [arch, default 90]
#   MVRT_CHECK_QUICK=1: skip the sanitizer and the 64-bit test
set -o pipefail
OUT=${OUT:-/tmp/mvrt_out}
mkdir -p "$OUT"
ARCH=${1:-90}
B=build-dev
T0=$(date +%s)
log() { echo "=== [$(( $(date +%s) - T0 ))s] $*"; }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem --format=csv 2>&1 | tee "$OUT/gpu.txt"
log configure
rm -f $B/CMakeCache.txt
GOLD=${MVRT_GOLDEN_DIR:+-DMVRT_GOLDEN_DIR=$MVRT_GOLDEN_DIR}
cmake -S . -B $B $GOLD -DMVRT_CUDA_ARCHS=$ARCH -DMVRT_WITH_HIP=OFF -DCMAKE_BUILD_TYPE=Release > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
log build
cmake --build $B -j16 --target mvrt_backend_cuda test_cuda_scan test_cuda_plugin test_cuda_scan_large bench_cuda_scan >> "$OUT/build.log" 2>&1 || { grep -E "error" "$OUT/build.log" | head -30; tail -20 "$OUT/build.log"; exit 1; }
# the rest of the project (mvrt check etc.) for ctest, in the background
( cmake --build $B -j12 >> "$OUT/build_all.log" 2>&1; echo $? > "$OUT/build_all.rc" ) &
BGPID=$!
P=$B/lib/libmvrt_backend_cuda.so
log scan tests: default paths, then the row kernels on every case
timeout 150 $B/bin/test_cuda_scan $P 2>&1 | tee "$OUT/tests.log" | grep -v "^ok"
MVRT_CUDA_SCAN_ROWS=64 timeout 150 $B/bin/test_cuda_scan $P 2>&1 | tee -a "$OUT/tests.log" | grep -v "^ok"
log bench f32 default
timeout 150 $B/bin/bench_cuda_scan $P f32 30 2>&1 | tee "$OUT/bench.log"
for R in ${MVRT_CHECK_ROWS:-}; do
  log bench f32 rows/block $R MV rows
  MVRT_BENCH_ROWS=0,1,2,4,5 MVRT_CUDA_SCAN_ROWS=$R timeout 60 $B/bin/bench_cuda_scan $P f32 20 2>&1 | grep -v "^case" | tee -a "$OUT/bench.log" | grep -v "^device"
done
log bench bf16 default
timeout 100 $B/bin/bench_cuda_scan $P bf16 20 2>&1 | grep -v "^case" | tee -a "$OUT/bench.log" | grep -v "^device"
wait $BGPID
log ctest -L cuda "(build_all rc $(cat $OUT/build_all.rc))"
(cd $B && timeout 200 ctest -L cuda -E cuda_scan_64bit --output-on-failure --timeout 150) > "$OUT/ctest.log" 2>&1
grep -E "tests passed|tests failed|Failed|\*\*\*|Passed|Skipped" "$OUT/ctest.log" | tail -25
if [ -z "$MVRT_CHECK_QUICK" ]; then
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
log memcheck
for c in groups_tiles N130 L1 N1_Lstrided odd_L lm_like bf16_mv; do timeout 60 $CS --tool memcheck --error-exitcode 9 $B/bin/test_cuda_scan $P $c >> "$OUT/sanitizer.log" 2>&1; echo "memcheck $c rc=$?"; done
for c in groups_tiles L1 N1_Lstrided odd_L lm_like bf16_mv; do MVRT_CUDA_SCAN_ROWS=64 timeout 60 $CS --tool memcheck --error-exitcode 9 $B/bin/test_cuda_scan $P $c >> "$OUT/sanitizer.log" 2>&1; echo "memcheck row64 $c rc=$?"; done
log racecheck
for c in odd_L groups N5 f16_N1; do timeout 60 $CS --tool racecheck --error-exitcode 9 $B/bin/test_cuda_scan $P $c >> "$OUT/sanitizer.log" 2>&1; echo "racecheck $c rc=$?"; done
for c in odd_L groups_tiles N5 f16_N1; do MVRT_CUDA_SCAN_ROWS=64 timeout 60 $CS --tool racecheck --error-exitcode 9 $B/bin/test_cuda_scan $P $c >> "$OUT/sanitizer.log" 2>&1; echo "racecheck row64 $c rc=$?"; done; grep -m3 -A6 "Warning\|Error" "$OUT/sanitizer.log" | head -20
log 64-bit test
timeout 200 $B/bin/test_cuda_scan_large $P 2>&1 | tee "$OUT/large.log" | tail -6
fi
log done
echo "---- summary ----"; grep -E "^(ok|FAIL)|cases failed" "$OUT/tests.log" | grep -v "^ok" ; grep -E "tests passed|tests failed" "$OUT/ctest.log"; cat "$OUT/bench.log"
