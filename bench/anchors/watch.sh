#!/bin/bash
# One device call: start bench/anchors/lease.sh, or $LEASE_SCRIPT, (the first call) or follow it; wait up to $1 s;
# print its log and pack /tmp/d into $OUT. Call it again within the machine's warm time.
W=${1:-560}; D=/tmp/d; T=$(date +%s)
if [ ! -d $D ]; then
  S=${LEASE_SCRIPT:-bench/anchors/lease.sh}
  [ "$S" != bench/anchors/lease.sh ] || [ -d .cutlass/include ] || { echo "no pipeline and no .cutlass here: a fresh machine without the carried paths"; exit 3; }
  # without CUTLASS's tools/util/include the 16-bit convs fall back to the Sm80 kernels (session 62)
  [ "$S" != bench/anchors/lease.sh ] || [ -f .cutlass/tools/util/include/cutlass/util/packed_stride.hpp ] || {
    echo "no .cutlass/tools/util/include: the sm_90a convs would not be built"; exit 3; }
  # torch_mambavision_one.py imports .anchor/mv/mambavision/models (session 65 lost its PyTorch runs
  # to a copy one level too shallow)
  [ -f .anchor/mv/mambavision/models/mamba_vision.py ] || {
    echo "no .anchor/mv/mambavision/models/mamba_vision.py: unpack MambaVision with tar x -C .anchor/mv"; exit 3; }
  mkdir -p $D/tj; nohup python3 -c 'import os; os.setsid(); os.execvp("bash", ["bash", "'$S'"])' > $D/pipe.out 2>&1 < /dev/null & sleep 2; echo "pipeline started"
fi
while [ ! -f $D/all.done ] && [ $(( $(date +%s) - T )) -lt $W ]; do sleep 5; done
cat $D/pipe.log; echo "--- tmv logs"; tail -qn 2 $D/t_*.log 2>/dev/null | tail -30
[ -f $D/ctest.log ] && { echo "--- ctest"; grep -cE "Test +#" $D/ctest.log; grep -E "\*\*\*Failed|Timeout" $D/ctest.log | head; }
ls $D/all.done 2>/dev/null
tar czf $OUT/d.tgz --exclude=d/gpu.lock -C /tmp d 2>/dev/null
# the compile caches, once the job is done, in pieces of at most 15 MiB (at most 7 come back)
if [ -f $D/all.done ] && [ -n "$LEASE_SAVE_CACHE" ]; then
  du -sh /tmp/torchinductor_cache /tmp/triton_cache 2>/dev/null
  python3 bench/anchors/compile_cache.py pack $OUT /tmp/torchinductor_cache /tmp/triton_cache
fi
ls -la $OUT
