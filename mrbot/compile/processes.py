# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The compile processes of the matrix: one worker process per compile thread, each replaced when it dies or
overruns a cell, or forked on demand by a compile server that keeps torch and Triton imported between runs."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import resource
import select
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import triton

from mrbot.compile import worker as worker_module

# A compile server (worker.serve): whether one may run, and how long it waits for the next run.
SERVER_SWITCH = 'MRBOT_COMPILE_SERVER'
SERVER_IDLE_S = 900
# The variables torch and Triton may read while the server imports them; each process gets the whole environment.
_IMPORT_TIME_VARIABLES = ('TRITON_', 'TORCH', 'PYTORCH_', 'CUDA_', 'NVIDIA_', 'PYTHON', 'LD_', 'OMP_', 'MKL_', 'PATH')
# The resource limits a compile process takes from the run that asks for it.
_LIMITS = ('RLIMIT_AS', 'RLIMIT_DATA', 'RLIMIT_CPU', 'RLIMIT_NOFILE', 'RLIMIT_NPROC', 'RLIMIT_FSIZE', 'RLIMIT_STACK')
# Connecting while the server's queue is full is refused at once; a few tries ride out a burst of jobs.
_CONNECT_TRIES = 20


class Worker:
    """One compile process, in a session of its own; replaced by a fresh one when it dies or overruns a cell."""

    def __init__(self, root: Path, env: dict[str, str], scratch: Path, number: int, server: Path | None = None) -> None:
        self.root, self.env, self.server = root, env, server
        self.stderr_path = scratch / f'worker-{number}.stderr'
        self.process: subprocess.Popen | _Served | None = None
        self.requests = 0

    def _start(self) -> subprocess.Popen | _Served:
        served = _connect(self.server, self.root, self.env, self.stderr_path) if self.server else None
        if served is not None:
            return served
        # read and write, so that the worker can read back what the compiler printed for the cell that failed
        stderr = self.stderr_path.open('w+b')
        process = subprocess.Popen([sys.executable, worker_module.__file__], cwd=self.root, env=self.env, text=True,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, bufsize=1,
                                   start_new_session=True)
        stderr.close()
        return process

    def compile(self, request: dict, timeout: float) -> dict:
        if self.process is None or self.process.poll() is not None:
            self.process = self._start()
        process = self.process
        self.requests += 1
        request = {**request, 'id': self.requests}
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            self.kill()

        timer = threading.Timer(timeout, expire)
        timer.start()
        try:
            process.stdin.write(json.dumps(request) + '\n')
            process.stdin.flush()
            answer = process.stdout.readline()
        except (BrokenPipeError, OSError, ValueError):
            answer = ''
        finally:
            timer.cancel()
        with contextlib.suppress(ValueError):
            parsed = json.loads(answer) if answer else None
            if isinstance(parsed, dict) and parsed.get('id') == request['id']:
                return parsed
        # no answer, or not one the worker wrote: whatever happened to the process, it is not trusted again
        self.kill()
        stderr = self.stderr_path.read_bytes().decode(errors='replace')
        if expired.is_set():
            return {'status': 'timeout', 'error': f'no result after {timeout:g} s', 'error_path': request['launch']['path'],
                    'error_line': request['launch']['line']}
        described = worker_module.describe_failure(None, stderr, request['launch'])
        return {'status': 'crashed', **described, 'error': f'the compiler aborted ({_signal_name(process.returncode)}): '
                                                           f"{described['error']}"}

    def kill(self) -> None:
        """End the process and anything it started, now."""
        process, self.process = self.process, None
        if process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            if isinstance(process, _Served):
                process.end()
            process.wait()

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=5)
        self.kill()


class _Served:
    """A compile process a server forked (worker.serve), seen through what `_Worker` uses of a Popen."""

    def __init__(self, connection: socket.socket, pid: int) -> None:
        self.connection, self.pid, self.returncode, self.ended = connection, pid, None, False
        self.stdin = _SocketInput(connection)
        self.stdout = connection.makefile('r', encoding='utf-8')

    def poll(self) -> int | None:
        """0 once the process has ended, which its socket tells (even of one nobody reaps); its status stays unknown
        (`returncode` None), since the server, not this process, is its parent."""
        if not self.ended:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if readable:
                try:
                    self.ended = not self.connection.recv(1, socket.MSG_PEEK)
                except OSError:
                    self.ended = True
        return 0 if self.ended else None

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired('compile server process', timeout)
            time.sleep(0.01)
        return 0

    def end(self) -> None:
        """Stop reading and writing: a read blocked on a process that something else keeps open returns."""
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)
        self.ended = True


class _SocketInput:
    """The requests side of a served process: closing it ends the process's input, as closing a pipe would."""

    def __init__(self, connection: socket.socket) -> None:
        self.connection, self.file = connection, connection.makefile('w', encoding='utf-8')

    def write(self, text: str) -> None:
        self.file.write(text)

    def flush(self) -> None:
        self.file.flush()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.file.close()
            self.connection.shutdown(socket.SHUT_WR)


def server_address(env: dict[str, str]) -> Path | None:
    """Where a compile server for this Python, torch and Triton listens; None where servers are off: unless
    `MRBOT_COMPILE_SERVER=1`, where it is set to anything else, or stderr is not a terminal (scripts, tests), or `CI`
    is set; and always where a `PYTHONPATH` entry is relative (the server's imports would read it from elsewhere) or
    there is no private folder for the socket.

    The socket lives in a folder of the user's own under the temporary directory, not in the repository: a socket's
    path may hold only about a hundred bytes. Its name changes with whatever the server has imported: the Python and
    its environment's folders (a `.pth` added to one changes it), every file of Triton and the top of torch (a rebuild
    keeps a version number), the variables they read as they load, and the worker's code. The repository and the rest
    of the environment go to each process with its request, so one server serves every clone and worktree."""
    wanted = os.environ.get(SERVER_SWITCH)
    if wanted != '1' and (wanted is not None or not sys.stderr.isatty() or os.environ.get('CI')):
        return None
    entries = env['PYTHONPATH'].split(os.pathsep) if 'PYTHONPATH' in env else []
    if not all(os.path.isabs(entry) for entry in entries):
        return None
    folder = Path(tempfile.gettempdir()) / f'mrbot-{os.getuid()}'
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        mode = folder.lstat()
    except OSError:
        return None
    # another user's folder, or one others may write, could hold a socket that answers for us
    if not stat.S_ISDIR(mode.st_mode) or mode.st_uid != os.getuid() or mode.st_mode & 0o077:
        return None
    loaded = sorted((name, value) for name, value in env.items() if name.startswith(_IMPORT_TIME_VARIABLES))
    imported = [(path, _file_state(path)) for path in [*_server_imports(), *filter(os.path.isabs, sys.path)]]
    key = hashlib.sha256(json.dumps([sys.executable, os.path.realpath(sys.executable), sys.prefix, sys.version,
                                     loaded, imported,
                                     hashlib.sha256(Path(worker_module.__file__).read_bytes()).hexdigest()]).encode())
    return folder / f'compile-{key.hexdigest()[:20]}.sock'


def _server_imports() -> list[str]:
    """The files that say which torch and Triton a server has imported: every file of Triton's package (an editable
    install is edited in place) and the entry points of torch's."""
    package = Path(triton.__file__).parent
    files = sorted(os.path.join(folder, name) for folder, _, names in os.walk(package) for name in names
                   if not name.endswith('.pyc'))
    spec = importlib.util.find_spec('torch')
    if spec is not None and spec.origin:
        files += [spec.origin, str(Path(spec.origin).parent / 'version.py')]
    return files


def _file_state(path: str) -> list[int]:
    try:
        state = os.stat(path)
    except OSError:
        return []
    return [state.st_ino, state.st_size, state.st_mtime_ns]


def _connect(address: Path, root: Path, env: dict[str, str], stderr_path: Path) -> _Served | None:
    """A compile process forked by the server at `address`, or None (no server, or not ours, or not answering)."""
    try:
        state = os.stat(address)
    except OSError:
        return None
    if state.st_uid != os.getuid():
        return None
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.settimeout(5)
        for attempt in range(_CONNECT_TRIES):
            try:
                connection.connect(str(address))
                break
            except BlockingIOError:
                # the server's queue is full for a moment: many jobs connecting at once
                if attempt == _CONNECT_TRIES - 1:
                    raise
                time.sleep(0.05)
        request = {'root': str(root), 'stderr': str(stderr_path), 'env': env, 'limits': _process_settings()}
        connection.sendall(json.dumps(request).encode() + b'\n')
        pid = int(connection.makefile('rb').readline() or b'0')
        connection.settimeout(None)
    except ConnectionRefusedError:
        # a server that died left its socket: clear it (that one, not a new server's), so a new one can listen there
        connection.close()
        with contextlib.suppress(OSError):
            if os.stat(address).st_ino == state.st_ino:
                address.unlink()
        return None
    except (OSError, ValueError):
        connection.close()
        return None
    if pid <= 0:
        connection.close()
        return None
    return _Served(connection, pid)


def _process_settings() -> dict:
    """What a process started here would inherit and a forked one would not: the umask, the niceness, the CPUs it may
    run on and the resource limits, so that a limit set for this run holds for its compiles too."""
    umask = os.umask(0)
    os.umask(umask)
    limits = {name: resource.getrlimit(getattr(resource, name)) for name in _LIMITS if hasattr(resource, name)}
    return {'umask': umask, 'nice': os.nice(0), 'cpus': sorted(os.sched_getaffinity(0)), 'rlimits': limits}


def start_server(address: Path, env: dict[str, str]) -> None:
    """Start a compile server for the next run; it stays `SERVER_IDLE_S` seconds after its last connection."""
    server = subprocess.Popen([sys.executable, worker_module.__file__, '--serve', str(address), str(SERVER_IDLE_S)],
                              cwd='/', env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    # the server leaves its starter at once (worker.serve forks), so this wait is short and leaves no zombie
    server.wait()


def _signal_name(returncode: int | None) -> str:
    if returncode is None:
        return 'its process ended'
    if returncode < 0:
        with contextlib.suppress(ValueError):
            return signal.Signals(-returncode).name
    return f'exit {returncode}'
