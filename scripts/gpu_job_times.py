# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The GPU job's time from its start to its result, split by phase, on a GPU machine laid out as a runner of
`mrbot-command.yml`'s `gpu` job: python3 scripts/gpu_job_times.py STEP... [--limit S]

Steps, in this order on one warm machine (each keeps its state under /tmp/jobs, so the next call goes on from it):
  setup       the default branch's checkout (the bot), the runner's user, the empty shared layer
  cold-bench  `/bench chunk_simple_gla --modes fwd` on the demo change, nothing compiled anywhere yet
  fill        the shared layer filled with the default branch's kernels of simple GLA (and KDA's where test-kda is
              among the steps), as docs/ci.md asks a filler to
              (another user, umask 022)
  warm-bench  the same `/bench` in a new job that reads the filled layer
  profile-gate  the warm job's gate again, by hand, under scripts/gate_profile.py, with brief and with full autotune
              timing: the time, each test's autotune configs and which tests fail
  test-kda    `/test tests/ops/test_kda.py` reading the layer
  gate-cache  the demo change's gate as the job runs it, without the layer: its launches compiled ahead into an empty
              cache, then its tests under scripts/gate_profile.py on that cache, which says which kernels the tests still
              compiled (gate-cache.md); needs only a clone, not setup's jobs
  demo        `mrbot demo` in a fresh clone, cold
  table       the phase table of every job so far
Each job installs mrbot into a fresh environment from the wheels in .whl (the runner would download them), clones the
pull request, and runs `mrbot action run` with the variables the authorize step hands on. Run as root, the jobs run as
the user `runner` and the filler as root. Logs, phases.json and phases.md go to $OUT after every step.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

JOBS = Path('/tmp/jobs')
SHARED = Path('/opt/mrbot-shared')
REPOSITORY = 'mrbot-dev/mrbot'
OUT = Path(os.environ.get('OUT', '/tmp/jobs/out'))
IDENTITY = ('-c', 'user.name=gpu', '-c', 'user.email=gpu@localhost')
# A line that starts a phase: the job's own progress lines on stderr (mrbot/bench/stage.py, mrbot/ci/job.py,
# mrbot/prepare.py's steps).
MARKERS = (
    (r'^setting up the base side', 'base side: compile, autotune'),
    (r'^gate: tests/', 'gate: capture and compile ahead'),
    (r'^gate: .*(compiled ahead|not compiled ahead)', 'gate: tests'),
    (r'^setting up the head side', 'head side: compile, autotune'),
    (r'^timing ', 'timing'),
    (r'^running tests/', 'tests'),
    (r'^\[\d+/\d+\] (\S+) \.\.\.', r'prepare: \1'),
)
BENCH = '/bench chunk_simple_gla --modes fwd'
# what the filler compiles: the kernels of the ops these jobs run (a runner's filler compiles `--all`); KDA's only where
# test-kda is asked for, since its 1,488 cells with simple GLA's outlast a 570-s call on an H100 (2026-12-07)
FILLED = ('fla/ops/simple_gla',)
FILLED_FOR_TEST = ('fla/ops/kda',)
TEST = '/test tests/ops/test_kda.py'
# the login the simulated comments are written by
ASKER = 'gpu-job-times'


def as_runner() -> dict:
    """subprocess arguments that run a command as the runner's user (root is the filler's)."""
    if os.geteuid() != 0 or (JOBS / 'as-root').exists():
        return {}
    entry = pwd.getpwnam('runner')
    return {'user': entry.pw_uid, 'group': entry.pw_gid, 'extra_groups': []}


def runner_environment(temp: Path) -> dict[str, str]:
    home = pwd.getpwnam('runner').pw_dir if os.geteuid() == 0 else os.environ['HOME']
    keep = {k: v for k, v in os.environ.items()
            if k.startswith(('NCCL_', 'TORCH_SYMM', 'NVSHMEM_', 'CUDA_', 'NVIDIA_', 'LD_LIBRARY_PATH', 'TRITON_LIBCUDA'))}
    return {**keep, 'PATH': f'{temp}/venv/bin:/usr/local/bin:/usr/bin:/bin', 'HOME': home, 'CI': 'true',
            'GITHUB_ACTIONS': 'true', 'GITHUB_REPOSITORY': REPOSITORY, 'GITHUB_RUN_ID': '1', 'RUNNER_TEMP': str(temp),
            'PYTHONNOUSERSITE': '1', 'PYTHONUNBUFFERED': '1', 'PIP_NO_CACHE_DIR': '1'}


def timed(argv: list[str], cwd: Path, env: dict[str, str], log: Path, limit: float, user: dict) -> tuple[float, list]:
    """Run `argv`, each output line stamped with its second since the start into `log`; the seconds and the lines."""
    start = time.monotonic()
    lines: list[tuple[float, str]] = []
    with log.open('a') as sink, subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                                 stderr=subprocess.STDOUT, text=True, start_new_session=True,
                                                 **user) as process:
        sink.write(f'$ {" ".join(argv)}  (in {cwd})\n')
        watchdog = threading.Timer(limit, os.killpg, (process.pid, signal.SIGKILL))
        watchdog.start()
        for line in process.stdout:
            now = time.monotonic() - start
            lines.append((now, line.rstrip()))
            sink.write(f'{now:7.1f} {line}')
            sink.flush()
        code = process.wait()
        watchdog.cancel()
        if code == -signal.SIGKILL:
            lines.append((time.monotonic() - start, f'stopped at the step limit, {limit:.0f} s'))
            sink.write(f'{lines[-1][0]:7.1f} {lines[-1][1]}\n')
        sink.write(f'exit {code} after {time.monotonic() - start:.1f} s\n')
    return time.monotonic() - start, lines


def phases_of(lines: list[tuple[float, str]], total: float, first: str) -> list[tuple[str, float]]:
    """Each phase's seconds, a phase running from the line that starts it to the next one's."""
    starts = [(0.0, first)]
    for at, text in lines:
        for pattern, name in MARKERS:
            found = re.match(pattern, text)
            if found and starts[-1][1] != found.expand(name):
                starts.append((at, found.expand(name)))
                break
    ends = [at for at, _ in starts[1:]] + [total]
    return [(name, end - at) for (at, name), end in zip(starts, ends, strict=True)]


def install(bot: Path, temp: Path, log: Path, user: dict) -> float:
    """The `run` command's install step of action.yml, offline: a fresh venv over the system's packages, mrbot[kernels]
    from the checkout `bot`."""
    env = runner_environment(temp)
    start = time.monotonic()
    timed([sys.executable, '-I', '-m', 'venv', '--system-site-packages', f'{temp}/venv'], temp, env, log, 300, user)
    # the machine's kernel stack lives in a venv of its own: its packages stand in for a runner's system site
    if subprocess.run([f'{temp}/venv/bin/python', '-c', 'import torch'], capture_output=True, **user).returncode:
        site = next((temp / 'venv' / 'lib').glob('python3*/site-packages'))
        (site / 'runner-system-site.pth').write_text(next(p for p in sys.path if p.endswith('site-packages')) + '\n')
    timed([f'{temp}/venv/bin/python', '-I', '-m', 'pip', 'install', '--quiet', '--no-index', '--find-links',
           str(JOBS / 'wheels'), f'{bot}[kernels]'], temp, env, log, 300, user)
    return time.monotonic() - start


def clone(folder: Path, name: str) -> Path:
    """A checkout of the default branch in `folder`, as actions/checkout leaves one."""
    subprocess.run(['git', 'clone', '-q', str(JOBS / 'bot'), str(folder / name)], check=True)
    return folder / name


def fresh(case: str) -> tuple[Path, Path]:
    """An empty folder for `case` and its `RUNNER_TEMP` inside it."""
    folder = JOBS / case
    shutil.rmtree(folder, ignore_errors=True)
    (folder / 'temp').mkdir(parents=True)
    return folder, folder / 'temp'


def hand_to_runner(folder: Path) -> None:
    """The runner's user owns what a job of it checks out, as on a runner (where the jobs run as root, root does)."""
    if as_runner():
        subprocess.run(['chown', '-R', 'runner:runner', str(folder)], check=True)


def record(case: str, command: str, layer: str, phases: list, start: float, lines: list) -> dict:
    """What a step leaves in phases.json: its phases, its seconds since `start`, the last line its command printed."""
    return {'case': case, 'command': command, 'layer': layer, 'phases': phases, 'seconds': time.monotonic() - start,
            'ended': lines[-1][1] if lines else ''}


def job(case: str, text: str, layer: str, limit: float) -> dict:
    """One GPU job of `text` on the demo change's pull request, from its checkout to its result."""
    folder, temp = fresh(case)
    log = OUT / f'{case}.log'
    start = time.monotonic()
    git = ['git', *IDENTITY]
    bot, pr = clone(folder, 'bot'), clone(folder, 'pr')
    subprocess.run([*git, 'checkout', '-q', '-b', 'demo-change'], cwd=pr, check=True)
    subprocess.run([*git, 'apply', 'examples/demo-change.patch'], cwd=pr, check=True)
    subprocess.run([*git, 'commit', '-qam', '[Perf] One more autotune config'], cwd=pr, check=True)
    hand_to_runner(folder)
    checkout = time.monotonic() - start
    user = as_runner()
    installed = install(bot, temp, log, user)
    sha = subprocess.run(['git', '-c', 'safe.directory=*', 'rev-parse', 'HEAD'], cwd=pr, capture_output=True, text=True,
                         check=True).stdout.strip()
    kind, args = accepted(text)
    # the fields of the comment's webhook payload the job reads: who asked, and the default branch
    event = temp / 'event.json'
    event.write_text(json.dumps({'comment': {'user': {'login': ASKER}}, 'repository': {'default_branch': 'main'}}))
    env = {**runner_environment(temp), 'MRBOT_COMMAND': kind, 'MRBOT_ARGS': args, 'MRBOT_SHA': sha,
           'GITHUB_EVENT_NAME': 'issue_comment', 'GITHUB_EVENT_PATH': str(event),
           'MRBOT_RUNNER': 'hopper', 'MRBOT_PR': '1', 'TRITON_CACHE_DIR': f'{temp}/triton-cache',
           'TRITON_CACHE_MANAGER': 'mrbot.bench.triton_cache:LayeredCache'}
    if layer != 'none':
        env['MRBOT_SHARED_TRITON_CACHE'] = str(SHARED)
    seconds, lines = timed([f'{temp}/venv/bin/mrbot', 'action', 'run', '--out', f'{temp}/out'], pr, env, log, limit, user)
    result = temp / 'out'
    if result.is_dir():
        shutil.copytree(result, OUT / f'{case}-result', dirs_exist_ok=True)
    return record(case, text, layer, [('checkout', checkout), ('install', installed),
                                      *phases_of(lines, seconds, 'job: start')], start, lines)


def accepted(text: str) -> tuple[str, str]:
    """The `command` and `args` outputs that the authorize step gives for `text` (the bot's own grammar)."""
    code = ('import json, sys; from pathlib import Path; from mrbot.ci import grammar; from mrbot.config import load_config; '
            'from mrbot.repo.ops import load_specs; r = Path("."); c = load_config(r); '
            'x = grammar.parse(sys.argv[1], load_specs(r, c), c); print(x.kind); print(json.dumps(x.args))')
    out = subprocess.run(['python3', '-c', code, text], cwd=JOBS / 'bot', capture_output=True, text=True, check=True,
                         env={**os.environ, 'PYTHONPATH': str(JOBS / 'bot')}).stdout.split('\n')
    return out[0], out[1]


def fill(limit: float, folders: list[str]) -> dict:
    """The filler: the default branch's launches of the ops in `folders` compiled for this GPU (their tests captured
    beside it) into the layer's folder for the repository, by its owner (root here), never by the runner's user."""
    folder, temp = fresh('fill')
    log = OUT / 'fill.log'
    start = time.monotonic()
    bot = clone(folder, 'bot')
    installed = install(bot, temp, log, {})
    target = SHARED / REPOSITORY
    target.mkdir(parents=True, exist_ok=True)
    env = {**runner_environment(temp), 'HOME': os.environ.get('HOME', '/root'), 'TRITON_CACHE_DIR': str(target)}
    os.umask(0o022)
    seconds, lines = timed([f'{temp}/venv/bin/mrbot', 'compile', *folders, '--depth', 'binary', '--targets', 'sm_90'],
                           bot, env, log, limit, {})
    entries = sum(1 for _ in target.rglob('*') if _.is_file())
    return record('fill', f"mrbot compile {' '.join(folders)} --depth binary --targets sm_90", f'{entries} files',
                  [('install', installed), ('compile', seconds)], start, lines)


def profiled_gate(python: str, checkout: Path, env: dict[str, str], name: str, limit: float,
                  user: dict) -> tuple[float, list]:
    """The simple GLA gate as the job runs it (12 workers), under scripts/gate_profile.py, which writes its lines to
    env's GATE_PROFILE; the log and the summary go to $OUT as NAME.log and NAME.md."""
    seconds, lines = timed([python, '-m', 'pytest', 'tests/ops/test_simple_gla.py', '-n', '12', '-q', '-p',
                            'no:cacheprovider', '-p', 'gate_profile'], checkout, env, OUT / f'{name}.log', limit, user)
    summary = subprocess.run([sys.executable, str(checkout / 'scripts' / 'gate_profile.py'), env['GATE_PROFILE']],
                             capture_output=True, text=True).stdout
    (OUT / f'{name}.md').write_text(summary)
    return seconds, lines


def profile_gate(limit: float) -> dict:
    """The warm job's gate run again by hand under scripts/gate_profile.py, to see what its tests spend the time on:
    the same checkout, venv, workers and layer, once with the autotuner timing each config in one run and once as
    Triton times it, each with a cache of its own beside the layer (profile-gate-brief.md, profile-gate-full.md)."""
    temp, pr = JOBS / 'warm-bench' / 'temp', JOBS / 'warm-bench' / 'pr'
    start = time.monotonic()
    phases, lines = [], []
    for timing in ('brief', 'full'):
        env = {**runner_environment(temp), 'TRITON_CACHE_DIR': f'{temp}/profile-cache-{timing}',
               'GATE_PROFILE_AUTOTUNE': timing,
               'TRITON_CACHE_MANAGER': 'mrbot.bench.triton_cache:LayeredCache',
               'MRBOT_SHARED_TRITON_CACHE': str(SHARED), 'PYTHONPATH': str(pr / 'scripts'),
               'GATE_PROFILE': f'{temp}/gate-profile-{timing}'}
        seconds, lines = profiled_gate(f'{temp}/venv/bin/python', pr, env, f'profile-gate-{timing}', limit, as_runner())
        phases.append((f'tests, {timing} autotune timing', seconds))
    return record('profile-gate', 'pytest tests/ops/test_simple_gla.py -n 12 -p gate_profile', 'filled', phases, start,
                  lines)


def gate_cache(limit: float) -> dict:
    """Whether the test processes find what the gate's compile ahead put in Triton's cache: the demo change's gate
    compiled ahead as `mrbot bench` does it, then run under scripts/gate_profile.py on the same cache, both with the
    machine's Python from a clone of this checkout."""
    # this step alone runs mrbot in the machine's Python; the others install it into a venv of their own
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from mrbot.testing import dispatch_variables

    folder, temp = fresh('gate-cache')
    repo = folder / 'repo'
    subprocess.run(['git', 'clone', '-q', str(Path.cwd()), str(repo)], check=True)
    subprocess.run(['git', 'apply', 'examples/demo-change.patch'], cwd=repo, check=True)
    # the gate's dispatch mode, off, as `mrbot bench` runs it
    env = {**os.environ, 'TRITON_CACHE_DIR': f'{temp}/triton-cache', 'PYTHONPATH': f'{repo}:{repo}/scripts',
           'GATE_PROFILE': f'{temp}/gate-profile', 'PYTHONUNBUFFERED': '1', **dispatch_variables('off')}
    env.pop('TRITON_CACHE_MANAGER', None)
    log = OUT / 'gate-cache.log'
    start = time.monotonic()
    ahead, lines = timed([sys.executable, '-c', 'from pathlib import Path; from mrbot.repo.workspace import Workspace; '
                          'from mrbot.compile.stage import warm_kernel_cache; '
                          'from mrbot.testing import local_gpu; '
                          "print(warm_kernel_cache(Workspace.load(Path('.')), ['tests/ops/test_simple_gla.py'], "
                          "local_gpu(), 'off'))"],
                         repo, env, log, limit, {})
    tests, lines = profiled_gate(sys.executable, repo, env, 'gate-cache', limit, {})
    return record('gate-cache', 'warm_kernel_cache, then pytest tests/ops/test_simple_gla.py -n 12 -p gate_profile',
                  'none', [('compile ahead', ahead), ('tests', tests)], start, lines)


def demo(limit: float) -> dict:
    """`mrbot demo` from a fresh clone of the default branch, its Triton cache empty."""
    folder, temp = fresh('demo')
    start = time.monotonic()
    repo = clone(folder, 'repo')
    hand_to_runner(folder)
    checkout = time.monotonic() - start
    user = as_runner()
    log = OUT / 'demo.log'
    installed = install(repo, temp, log, user)
    env = {**runner_environment(temp), 'TRITON_CACHE_DIR': f'{temp}/triton-cache'}
    seconds, lines = timed([f'{temp}/venv/bin/python', '-m', 'mrbot.cli', 'demo'], repo, env, log, limit, user)
    return record('demo', 'mrbot demo', 'none', [('checkout', checkout), ('install', installed),
                                                  *phases_of(lines, seconds, 'demo: start')], start, lines)


def setup() -> dict:
    """The default branch's checkout, the runner's user, the wheels where that user can read them, an empty layer."""
    here = Path.cwd()
    if subprocess.run(['git', 'rev-parse', '--git-dir'], capture_output=True).returncode:
        subprocess.run(['git', 'init', '-q'], check=True)
        subprocess.run(['git', *IDENTITY, 'add', '-A'], check=True)
        subprocess.run(['git', *IDENTITY, 'commit', '-qm', 'base'], check=True)
    elif subprocess.run(['git', 'status', '--porcelain'], capture_output=True, text=True).stdout:
        subprocess.run(['git', *IDENTITY, 'add', '-A'], check=True)
        subprocess.run(['git', *IDENTITY, 'commit', '-qm', "device: this session's uncommitted work"], check=True)
    shutil.rmtree(JOBS, ignore_errors=True)
    JOBS.mkdir(parents=True)
    subprocess.run(['git', 'clone', '-q', str(here), str(JOBS / 'bot')], check=True)
    subprocess.run(['git', 'checkout', '-q', '-B', 'main'], cwd=JOBS / 'bot', check=True)
    shutil.copytree(here / '.whl', JOBS / 'wheels')
    if os.geteuid() == 0:
        if subprocess.run(['id', 'runner'], capture_output=True).returncode:
            subprocess.run(['useradd', '-m', 'runner'], check=True)
        shutil.rmtree(SHARED, ignore_errors=True)
        SHARED.mkdir(mode=0o755, parents=True)
        os.chmod(SHARED, 0o755)
        try:
            reachable = not subprocess.run([sys.executable, '-c', 'import torch'], capture_output=True,
                                           **as_runner()).returncode
        except OSError:
            reachable = False
        if not reachable:
            # the machine's Python is out of the runner user's reach: the jobs run as root, and so read no layer
            (JOBS / 'as-root').touch()
            print(f'{sys.executable} does not run as the user runner: the jobs run as root', flush=True)
    os.chmod(JOBS, 0o755)
    for path in [JOBS / 'wheels', *(JOBS / 'wheels').iterdir()]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    machine = subprocess.run(['nvidia-smi', '--query-gpu=name,driver_version', '--format=csv,noheader'],
                             capture_output=True, text=True).stdout.strip() if shutil.which('nvidia-smi') else 'no GPU'
    stack = subprocess.run(['python3', '-c', 'import torch, triton, sys; print(torch.__version__, torch.version.cuda, '
                            'triton.__version__, sys.version.split()[0])'], capture_output=True, text=True).stdout.strip()
    head = subprocess.run(['git', 'log', '--oneline', '-1'], cwd=JOBS / 'bot', capture_output=True, text=True).stdout
    jobs_user = pwd.getpwuid(as_runner().get('user', os.geteuid())).pw_name
    return {'case': 'setup', 'command': f'{machine}; torch, CUDA, triton, Python: {stack}; main {head.strip()}; '
                                        f'uid {os.geteuid()}, jobs as {jobs_user}, {os.cpu_count()} cores',
            'layer': '', 'phases': [], 'seconds': 0.0, 'ended': ''}


def kda_layer(records: list[dict]) -> str:
    """What the layer holds for test-kda's table row: a fill of an earlier call may have left KDA's kernels out."""
    fill = next((r for r in records if r['case'] == 'fill'), None)
    if fill is None:
        return 'empty'
    return 'filled' if FILLED_FOR_TEST[0] in fill['command'] else 'filled without KDA'


def table(records: list[dict]) -> str:
    rows = ['| job | layer | phase | seconds |', '| --- | --- | --- | ---: |']
    for record in records:
        if record['case'] == 'setup':
            rows.insert(0, f"{record['command']}\n")
            continue
        for name, seconds in record['phases']:
            rows.append(f"| {record['case']} | {record['layer']} | {name} | {seconds:.1f} |")
        rows.append(f"| **{record['case']}** | | **from start to result** | **{record['seconds']:.1f}** |")
    return '\n'.join(rows) + '\n'


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('steps', nargs='+',
                        choices=['setup', 'cold-bench', 'fill', 'warm-bench', 'profile-gate', 'test-kda', 'gate-cache',
                                 'demo', 'table'])
    parser.add_argument('--limit', type=float, default=540, help='seconds for each job (default: 540)')
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    store = JOBS / 'phases.json'
    for step in args.steps:
        print(f'== {step} {time.strftime("%H:%M:%S")}', flush=True)
        records = json.loads(store.read_text()) if store.exists() and step != 'setup' else []
        kda_held = kda_layer(records)
        made = {'setup': setup, 'cold-bench': lambda: job('cold-bench', BENCH, 'empty', args.limit),
                'fill': lambda: fill(args.limit, [*FILLED, *(FILLED_FOR_TEST if 'test-kda' in args.steps else ())]),
                'warm-bench': lambda: job('warm-bench', BENCH, 'filled', args.limit),
                'profile-gate': lambda: profile_gate(args.limit),
                'test-kda': lambda held=kda_held: job('test-kda', TEST, held, args.limit),
                'demo': lambda: demo(args.limit),
                'gate-cache': lambda: gate_cache(args.limit),
                'table': lambda: None}[step]()
        if made:
            records = [r for r in records if r['case'] != made['case']] + [made]
            store.write_text(json.dumps(records, indent=1))
            print(f"{made['case']}: {made['seconds']:.1f} s; last line: {made['ended']}", flush=True)
        shutil.copy(store, OUT / 'phases.json')
        (OUT / 'phases.md').write_text(table(records))
    print(table(json.loads(store.read_text())), end='')
    return 0


if __name__ == '__main__':
    sys.exit(main())
