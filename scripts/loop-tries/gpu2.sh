# scratch: the profile of main's chunk_kda, the forward intra kernel's ablation, then the bf16 try's profile and memcheck
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee $OUT/machine.txt
python3 -c "import torch, triton, sys; print(torch.__version__, triton.__version__, torch.version.cuda, sys.version.split()[0])" | tee -a $OUT/machine.txt
echo "== kernels main $(date -u +%T)"
timeout 130 python3 benchmarks/kernel_times.py --op kda --shapes 8x2048x16x128x128 > $OUT/kernels-main.txt 2>&1; cat $OUT/kernels-main.txt
echo "== ablation $(date -u +%T)"
timeout 130 python3 scripts/loop-tries/kda_intra_ablation.py > $OUT/ablation.txt 2>&1; cat $OUT/ablation.txt
echo "== bf16 $(date -u +%T)"
git apply scripts/loop-tries/bf16.patch || exit 1
timeout 130 python3 benchmarks/kernel_times.py --op kda --shapes 8x2048x16x128x128 > $OUT/kernels-bf16.txt 2>&1; cat $OUT/kernels-bf16.txt
echo "== memcheck bf16 $(date -u +%T)"
for case in dense packed; do timeout 70 compute-sanitizer --tool memcheck python3 scripts/kda_sanitize.py $case > $OUT/memcheck-$case.txt 2>&1; echo "rc $?"; tail -3 $OUT/memcheck-$case.txt; done
echo "== done $(date -u +%T)"
