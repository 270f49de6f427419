# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
# A recorded loop on a GPU machine: bash scripts/gpu_loop.sh STEP...; each step under its own time limit, logs in $OUT.
# LOOP_OP, LOOP_SHAPES and LOOP_ROUNDS choose the op (chunk_simple_gla by default), its shapes and rounds (10), and
# LOOP_START_ARGS adds to `mrbot loop start` (a backend's tries: --modes fwd --dispatch on --env VAR=1); a try named NAME applies
# scripts/loop-tries/NAME.patch (noted by NAME.note beside it; the tries that wait for a GPU, each against the main they
# were written on) where it exists, else the edit of scripts/loop_candidates.py of that name; a
# try stopped by the time limit is run again by the same step: the gate it passed on this device stands, its kernels
# stay compiled.
export PYTHONUNBUFFERED=1
OP=${LOOP_OP:-chunk_simple_gla}
SHAPES=${LOOP_SHAPES:-B8-T2048-H16-K128 B4-T4096-H32-K64}
BOUND=${LOOP_BOUND:-"latency-bound: each program walks its chunks in order, a chain of dependent steps per chunk with about two programs per SM (docs/performance.md); the forward's warp and stage space does not move it"}
TRIES=$PWD/scripts/loop-tries
M="python3 -m mrbot.cli"
G="-c user.name=gpu -c user.email=gpu@localhost"
step() { echo "== $1 $(date -u +%T)"; }
# the loop runs in a clone under /tmp, which stays on a warm machine between calls while the checkout is sent anew
for s in "$@"; do
  [ "$s" = setup ] || cd /tmp/loop || exit 1
  case $s in
    setup)
      step setup; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
      python3 -c "import torch, triton, sys; print(torch.__version__, triton.__version__, torch.version.cuda, sys.version.split()[0])"
      if [ -d /tmp/loop ]; then echo "warm machine: /tmp/loop kept"
      elif [ -f .gpu/loop.bundle ]; then
        # a machine given back between calls: the loop comes back from what the last call returned (carry .gpu)
        git clone -q .gpu/loop.bundle /tmp/loop && git -C /tmp/loop fetch -q "$PWD/.gpu/loop.bundle" 'refs/mrbot/*:refs/mrbot/*' \
          && mkdir -p /tmp/loop/.mrbot && cp .gpu/history.sqlite3 /tmp/loop/.mrbot/ && echo "restored /tmp/loop from .gpu"
      else
        git log --oneline -1 || { git init -q && git $G add -A && git $G commit -qm base; }
        git status --short | head -30; [ -z "$(git status --porcelain)" ] || { git $G add -A && git $G commit -qm "device: this session's uncommitted work"; }
        git log --oneline -2; git clone -q . /tmp/loop && git -C /tmp/loop status --short
      fi
      # compile cells of the tries computed on a CPU machine (scripts/loop_cells.sh): their matrices read them here
      if [ -f .gpu/compile-cells.json ] && [ ! -f /tmp/loop/.mrbot/cache/compile-cells.json ]; then
        mkdir -p /tmp/loop/.mrbot/cache && cp .gpu/compile-cells.json /tmp/loop/.mrbot/cache/ && echo "compile cells seeded from .gpu"
      fi ;;
    start)
      step start; timeout -s INT 540 $M loop start --op $OP --shapes $SHAPES --rounds ${LOOP_ROUNDS:-10} --gate-workers 12 ${LOOP_START_ARGS:-} ;;
    try-*)
      name=${s#try-}; step "$s"; git checkout -q -- fla
      if [ -f $TRIES/$name.patch ]; then git apply $TRIES/$name.patch || exit 1; note=$(head -1 $TRIES/$name.note)
      else
        python3 scripts/loop_candidates.py $name || exit 1
        note=$(case $name in slower) echo "copy q before the forward (deliberately slower)";; neutral) echo "a comment in the forward kernel (neutral)";; configs) echo "forward autotune over 2-8 warps and 2-4 stages";; esac)
      fi
      timeout -s INT 540 $M loop try --note "$note"; git checkout -q -- fla ;;
    status) step status; $M loop status; $M loop status --format json > $OUT/status.json ;;
    end)
      # promote the try with the best geomean among the faster ones; with none, the loop ends in a no-go
      step end; best=$($M loop status --format json | python3 -c "
import json, sys
faster = [t for t in json.load(sys.stdin)['tries'] if t['verdict'] == 'faster']
print(max(faster, key=lambda t: t['speedup'])['number'] if faster else '')")
      if [ -n "$best" ]; then timeout -s INT 540 $M loop promote "$best"
      else $M loop no-go --bound "$BOUND"
      fi ;;
    claim) step claim; $M loop claim > $OUT/claim.md; cat $OUT/claim.md ;;
  esac
  # the store and the loop's commits leave the machine after every step: a machine given back keeps nothing
  [ -f .mrbot/history.sqlite3 ] && python3 -c "import sqlite3,sys; s=sqlite3.connect('.mrbot/history.sqlite3'); d=sqlite3.connect(sys.argv[1]); s.backup(d); d.close()" $OUT/history.sqlite3
  [ "$s" = setup ] || git bundle create -q $OUT/loop.bundle --all
done
