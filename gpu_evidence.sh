# Issue 5 evidence runs on the device; not committed.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
git rev-parse -q --verify HEAD >/dev/null || { git add -A; git -c user.name=x -c user.email=x@x commit -qm snapshot; }
commit() { git -c user.name=x -c user.email=x@x commit -qam "$1"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/smi.txt
nvidia-smi | head -5 >> $OUT/smi.txt
python3 -c 'import torch, triton; print(torch.__version__, torch.version.cuda, triton.__version__)' >> $OUT/smi.txt
bench() { name=$1; shift; s=$(date +%s.%N)
  timeout -s INT $LIMIT python3 -m mrbot.cli bench --op chunk_simple_gla --rounds 10 --json $OUT/$name.json "$@" \
    > $OUT/$name.txt 2> $OUT/$name.err; echo "$name rc=$? wall=$(python3 -c "print(round($(date +%s.%N)-$s,1))")s" >> $OUT/walls.txt; }
spread() { python3 - "$@" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for row in r['rows']:
    for side in ('base_ms', 'head_ms'):
        xs = row[side]; m = sorted(xs)[len(xs)//2]
        print(row['mode'], row['shape']['name'], side, 'spread %.3f%%' % (100*(max(xs)-min(xs))/m), 'aa_noise', row.get('aa_noise'), 'n', len(xs))
PY
}
if [ "$STEP" = 1 ]; then
  LIMIT=250 bench aa --aa --no-gate; spread $OUT/aa.json > $OUT/aa_spread.txt
  cp .mrbot/runner-*.json $OUT/ 2>/dev/null
  sed -i '1a # Comment-only change for the bench evidence run.' fla/ops/simple_gla/chunk.py; commit comment
  LIMIT=300 bench comment --base HEAD~1 --gate-k 'chunk and bf16'
  git log --oneline -3 > $OUT/log.txt
fi
if [ "$STEP" = 2 ]; then
  python3 - <<'PY'
from pathlib import Path
p = Path('fla/ops/simple_gla/function.py'); s = p.read_text()
anchor = "    config = kernels.launch_config(K, V, q.dtype, False)\n"
assert s.count(anchor) == 1
p.write_text(s.replace(anchor, "    q = q.clone()  # planted extra pass\n" + anchor))
PY
  git diff --stat > $OUT/slow_diff.txt
  LIMIT=280 bench slow --base HEAD --no-gate
  LIMIT=150 bench ncu --base HEAD --no-gate --modes fwd --shapes B8-T2048-H16-K128 --rounds 3 --ncu 'chunk_simple_gla_fwd'
  ls -R profile > $OUT/profile_ls.txt 2>&1
fi
