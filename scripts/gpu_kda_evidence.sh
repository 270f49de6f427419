# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
# The evidence for chunk_kda beside its loop, in one call on a GPU machine: bash scripts/gpu_kda_evidence.sh; logs in
# $OUT. The comparison runs upstream's op from the fla-core wheel, so the call carries .whl (fla-core 0.6.0, einops);
# each step's own time limit keeps a slow step from costing the others.
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
SHAPES=${KDA_SHAPES:-8x2048x16x128x128 4x4096x32x64x64 packed:8x2048x16x128x128}
PROFILED=${KDA_PROFILED:-8x2048x16x128x128}
step() { echo "== $1 $(date -u +%T)"; }
step machine
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee $OUT/machine.txt
python3 -c "import torch, triton, sys; print(torch.__version__, triton.__version__, torch.version.cuda, sys.version.split()[0])" \
  | tee -a $OUT/machine.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
step times
timeout 240 python3 benchmarks/chunk_ops.py --op kda --shapes $SHAPES --json $OUT/ours.json | tee $OUT/ours.txt
PYTHONPATH=/tmp/site timeout 240 python3 benchmarks/chunk_ops.py --op kda --shapes $SHAPES --json $OUT/upstream.json \
  | tee $OUT/upstream.txt
step kernels
timeout 120 python3 benchmarks/kernel_times.py --op kda --shapes $PROFILED | tee $OUT/kernels-ours.txt
PYTHONPATH=/tmp/site timeout 120 python3 benchmarks/kernel_times.py --op kda --shapes $PROFILED \
  | tee $OUT/kernels-upstream.txt
step memcheck
for case in dense packed; do
  timeout 240 compute-sanitizer --tool memcheck python3 scripts/kda_sanitize.py $case > $OUT/memcheck-$case.txt 2>&1
  tail -3 $OUT/memcheck-$case.txt
done
