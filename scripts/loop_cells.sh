# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
# The compile cells of a GPU loop's tries, computed on this (CPU) machine ahead of the GPU session:
# bash scripts/loop_cells.sh NAME...; each NAME is scripts/loop-tries/NAME.patch, compiled as `mrbot loop try` compiles
# it (`mrbot compile` of the files it changes, the configured targets and depth) in a clone of HEAD, one cache for all.
# The cells land in .gpu/compile-cells.json, which `scripts/gpu_loop.sh setup` puts in the loop's cache (carry .gpu):
# the key of a cell is the kernel's source, its specialization, the target, Triton's version and the compile worker's
# code, none of them the machine's, so the try's matrix there reads them instead of compiling on the GPU's time.
set -e
here=$PWD
work=$(mktemp -d /tmp/loop-cells.XXXXXX)
git clone -q "$here" "$work/repo"
cd "$work/repo"
# cells computed by an earlier run stay, so that adding a try compiles only its own
if [ -f "$here/.gpu/compile-cells.json" ]; then mkdir -p .mrbot/cache && cp "$here/.gpu/compile-cells.json" .mrbot/cache/; fi
for name in "$@"; do
  patch=$here/scripts/loop-tries/$name.patch
  git apply "$patch"
  echo "== $name $(date -u +%T)"
  "$here/.venv/bin/python" -m mrbot.cli compile $(sed -n 's|^+++ b/||p' "$patch") 2>&1 | tail -1
  git checkout -q -- .
done
mkdir -p "$here/.gpu"
cp .mrbot/cache/compile-cells.json "$here/.gpu/compile-cells.json"
echo "$(du -h "$here/.gpu/compile-cells.json" | cut -f1) of cells in .gpu/compile-cells.json"
rm -rf "$work"
