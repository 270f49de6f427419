# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""A compile process of the matrix: `python worker.py` in the repository imports each kernel there and compiles it.

It reads one JSON cell per line on stdin (`{"id": 1, "launch": {...}, "arch": 90, "depth": "ttgir"}`) and answers one
JSON line with the same `id` on stdout per cell: `ok` with the shared memory the kernel asks for and, at depth `sass`,
the registers and spill bytes ptxas reports, or `error` with the compiler's first line and the source line it names.
Triton's own stages compile, for the given target, on a machine with no GPU, to one of four depths: `ttgir` (the code
generator and every TTIR and TTGIR pass, then the passes that allocate shared memory), `llir` (the whole lowering to
LLVM), `sass` (on through PTX to ptxas) or `binary` (Triton's whole compile, kept in its cache: `TRITON_CACHE_DIR`, or
its cache manager, as the process's environment sets them). Its stderr is a file the parent opened, emptied before
each cell, so that it holds what the compiler printed for that cell alone: the worker reads it back for an error, the
parent after a crash (a compiler assertion aborts this process; the parent sees it die and reports that cell). It
imports nothing of mrbot, so that it runs with whatever the repository holds. `python worker.py --serve SOCKET IDLE`
is a compile server instead (`serve`): it forks such processes on demand, with torch and Triton already imported.
"""

import contextlib
import importlib
import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
import time

STAGES = ('ttir', 'ttgir', 'llir', 'ptx')
# How often a compile server checks its socket while no connection comes.
_SERVER_WAKE_S = 30.0
_REGISTERS = re.compile(r'Used (\d+) registers')
_SPILLS = re.compile(r'(\d+) bytes spill stores, (\d+) bytes spill loads')
# A diagnostic MLIR prints to stderr: "/path/file.py:12:4: error: what went wrong" ("<unknown>:0:" without a place).
_DIAGNOSTIC = re.compile(r'^(\S+?):(\d+)(?::\d+)?: error: (.*)$', re.MULTILINE)
# MLIR's summary of a failed pipeline, which says nothing a reader can act on but names the pass.
_PIPELINE_FAILED = 'Failures have been detected while processing an MLIR pass pipeline'
_FAILED_PASS = re.compile(r'Pipeline failed while executing \[`(\w+)`')
# A C++ assertion: "python: /path/X.h:180: <signature>: Assertion `cond' failed."
_ASSERTION = re.compile(r'([^\s:]+):(\d+): .*(Assertion `.*\' failed\.?)')


def kernel_of(launch: dict):
    """The JITFunction of a captured launch, through any autotune or heuristics wrappers around it."""
    obj = getattr(importlib.import_module(launch['module']), launch['kernel'])
    while not hasattr(obj, 'arg_names') or not hasattr(obj, 'cache_key'):
        obj = obj.fn
    return obj


def source_of(jit, launch: dict):
    import triton.language as tl
    from triton.compiler import ASTSource

    constexprs = {}
    for key, value in zip(launch['constant_keys'], launch['constant_vals'], strict=True):
        if isinstance(value, str) and tl.dtype.is_dtype(value):
            value = tl.dtype(value)
        elif isinstance(value, dict) and 'constexpr' in value:
            value = tl.constexpr(value['constexpr'])
        constexprs[tuple(key)] = value
    signature = {name: tuple(kind) if isinstance(kind, list) else kind for name, kind in launch['signature'].items()}
    attrs = {tuple(key): value for key, value in zip(launch['attrs_keys'], launch['attrs_vals'], strict=True)}
    # a Gluon kernel is written at the layout level: its source makes TTGIR directly
    if getattr(jit, 'is_gluon', lambda: False)():
        from triton.experimental.gluon._runtime import GluonASTSource

        return GluonASTSource(jit, signature, constexprs, attrs)
    return ASTSource(jit, signature, constexprs, attrs)


def _ptxas(ptx: str, arch: int, options) -> dict:
    """Registers and spill bytes of the PTX, from ptxas's verbose log, with the flags Triton passes it."""
    from triton.backends.nvidia.compiler import get_ptxas, sm_arch_from_capability

    with tempfile.TemporaryDirectory(prefix='mrbot-ptxas-') as folder:
        source = os.path.join(folder, 'kernel.ptx')
        with open(source, 'w') as out:
            out.write(ptx)
        fmad = [] if options.enable_fp_fusion else ['--fmad=false']
        extra = options.ptx_options.split(' ') if options.ptx_options else []
        command = [get_ptxas(arch).path, *fmad, '-v', *extra, f'--gpu-name={sm_arch_from_capability(arch)}', source,
                   '-o', os.path.join(folder, 'kernel.cubin')]
        done = subprocess.run(command, capture_output=True, text=True)
    log = done.stdout + done.stderr
    if done.returncode != 0:
        raise RuntimeError(f'ptxas failed: {next((x for x in log.splitlines() if "error" in x), log.strip()[:300])}')
    registers, spills = _REGISTERS.search(log), _SPILLS.search(log)
    return {'registers': int(registers.group(1)) if registers else None,
            'spills': int(spills.group(1)) + int(spills.group(2)) if spills else 0}


def compile_cell(cell: dict) -> dict:
    """Compile one launch for one target to the cell's depth; raises what the compiler raises."""
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend

    launch, arch = cell['launch'], cell['arch']
    jit = kernel_of(launch)
    target = GPUTarget('cuda', arch, 32)
    backend = make_backend(target)
    # JSON turned the tuples of Triton's options into lists
    options = backend.parse_options({k: tuple(v) if isinstance(v, list) else v for k, v in launch['options'].items()})
    source = source_of(jit, launch)
    if cell['depth'] == 'binary':
        import triton

        # as a launch on a GPU of this target compiles it (JITFunction.preload), so its binary lands in Triton's cache
        # under the key that launch looks up
        kernel = triton.compile(source, target=target, options=options.__dict__)
        return {'shared': int(kernel.metadata.shared), 'registers': None, 'spills': None}
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    module = source.make_ir(target, options, backend.get_codegen_implementation(options), backend.get_module_map(),
                            context)
    stages: dict = {}
    backend.add_stages(stages, options, source.language)
    metadata = {'target': target, **options.__dict__}
    depth = cell['depth']
    last = STAGES.index({'ttgir': 'ttgir', 'llir': 'llir', 'sass': 'ptx'}[depth])
    for stage in (s for s in STAGES[:last + 1] if s in stages):
        module = stages[stage](module, metadata)
    if depth == 'ttgir':
        return {'shared': _allocated_shared(module, options, arch), 'registers': None, 'spills': None}
    result = {'shared': int(metadata.get('shared', 0)), 'registers': None, 'spills': None}
    if depth == 'sass':
        result.update(_ptxas(module, arch, options))
    return result


def _allocated_shared(module, options, arch: int) -> int:
    """Shared memory per block of a TTGIR module, from the passes of Triton's LLVM lowering that decide it, run alone.

    The lowering after them (to LLVM, then LLVM's O3) is most of a compile's time and moves no shared memory.
    """
    from triton._C.libtriton import ir, nvidia, passes
    from triton.backends.nvidia.compiler import get_ptx_version_from_options

    manager = ir.pass_manager(module.context)
    passes.ttgpuir.add_combine_tensor_select_and_if(manager)
    passes.ttgpuir.add_allocate_warp_groups(manager)
    passes.convert.add_scf_to_cf(manager)
    passes.gluon.add_inliner(manager)
    nvidia.passes.ttgpuir.add_allocate_shared_memory_nv(manager, arch, get_ptx_version_from_options(options, arch))
    manager.run(module, 'mrbot_allocate_shared')
    return int(module.get_int_attr('ttg.shared') or 0)


def _jit_functions(jit):
    """The kernel and every JIT function its globals reach, each once."""
    seen, stack = {}, [jit]
    while stack:
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen[id(fn)] = fn
        stack.extend(value for value in fn.__globals__.values()
                     if hasattr(value, 'cache_key') and hasattr(value, '__globals__') and id(value) not in seen)
    return list(seen.values())


def _def_line(fn) -> tuple[str, int]:
    """The file of a JIT function and the line of its `def` (its decorators come first)."""
    lines, first = inspect.getsourcelines(fn.fn)
    offset = next((i for i, line in enumerate(lines) if line.lstrip().startswith('def ')), 0)
    return os.path.relpath(inspect.getsourcefile(fn.fn)), first + offset


def _error_place(error: BaseException, launch: dict) -> tuple[str, int]:
    """The file and line a code-generator error names, in whichever JIT function it was compiling; else the kernel."""
    node, src = getattr(error, 'node', None), getattr(error, 'src', None)
    if src is not None and hasattr(node, 'lineno'):
        owner = next((fn for fn in _jit_functions(kernel_of(launch)) if fn.src == src), None)
        if owner is not None:
            path, line = _def_line(owner)
            # the code generator counts from the function's `def`, as line 1
            return path, line + node.lineno - 1
    return launch['path'], launch['line']


def describe_failure(error: BaseException | None, stderr: str, launch: dict) -> dict:
    """The first line worth reading of what went wrong, and where: MLIR's first specific diagnostic in `stderr`, an
    assertion the compiler printed (before aborting, or not), or the Python exception; with the failing pass, if any."""
    path, line = launch['path'], launch['line']
    diagnostics = [match for match in _DIAGNOSTIC.finditer(stderr) if _PIPELINE_FAILED not in match.group(3)]
    assertion = _ASSERTION.search(stderr)
    if diagnostics:
        where, number, message = diagnostics[0].groups()
        message = f'MLIR: {message}'
        if where.endswith('.py'):
            path, line = os.path.relpath(where), int(number)
    elif assertion:
        message = f'{assertion.group(3)} ({os.path.basename(assertion.group(1))}:{assertion.group(2)})'
    elif error is None:
        message = next((text.strip() for text in reversed(stderr.splitlines()) if text.strip()), 'no message')
    else:
        lines = [text.strip() for text in str(error).splitlines() if text.strip()]
        message = f"{type(error).__name__}: {next((t for t in reversed(lines) if not t.startswith(('at ', '^'))), '')}"
        path, line = _error_place(error, launch)
    failed_pass = _FAILED_PASS.search(stderr)
    if failed_pass:
        message += f' (in {failed_pass.group(1)})'
    return {'error': message[:500], 'error_path': path, 'error_line': line}


def _reset_stderr() -> None:
    """Empty this process's stderr file, so that it holds only what compiling the next cell prints (a terminal is
    left alone)."""
    sys.stderr.flush()
    try:
        os.ftruncate(2, 0)
        os.lseek(2, 0, os.SEEK_SET)
    except OSError:
        pass


def _stderr_text() -> str:
    try:
        return os.pread(2, os.fstat(2).st_size, 0).decode(errors='replace')
    except OSError:
        return ''


def main() -> None:
    sys.path.insert(0, os.getcwd())
    # the answers get the original stdout to themselves: whatever the kernels' modules or the compiler print (a
    # `tl.static_print`, a message at import) goes to stderr
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), 'w', buffering=1)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    for raw in sys.stdin:
        cell = json.loads(raw)
        start = time.monotonic()
        _reset_stderr()
        try:
            answer = {'status': 'ok', **compile_cell(cell)}
        except Exception as error:  # every compiler error is this cell's finding, not the end of the process
            answer = {'status': 'error', **describe_failure(error, _stderr_text(), cell['launch'])}
        answer.update(id=cell.get('id'), seconds=round(time.monotonic() - start, 3))
        protocol.write(json.dumps(answer) + '\n')
    protocol.flush()
    # every answer is written: skipping the interpreter's teardown (torch's exit handlers, about a second) lets the
    # parent, which waits for this process, go on at once
    os._exit(0)


def serve(address: str, idle: float) -> None:
    """Stay warm for the next run: import what every compile process imports (torch, Triton's compiler), then, for
    each connection to the socket at `address`, fork a compile process that speaks `main`'s protocol over it.

    Nothing of the repository is imported here, nor can be: the server runs in `/`, so neither its imports nor a
    `sitecustomize` on an empty `PYTHONPATH` entry reach the repository. A connection first sends one JSON line, the
    repository's path, the stderr file and the environment the process should have; the process moves there by path
    (a repository moved or cloned again at the path is the one compiled) and answers with its pid. The server ends
    after `idle` seconds without a connection, or once its socket file is gone or replaced.
    """
    import signal
    import socket

    # leave the starter at once: it waits for this process, and the imports take seconds
    if os.fork() > 0:
        os._exit(0)
    os.chdir('/')
    sys.path[:] = [entry for entry in sys.path if entry and entry != '.']
    import triton.compiler  # noqa: F401 - imported once here instead of in every forked process
    with contextlib.suppress(ImportError):
        import torch._dynamo  # noqa: F401 - what `torch.compiler.disable`, common at a kernel module's import, loads

    umask = os.umask(0o077)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    os.umask(umask)
    listener.listen(socket.SOMAXCONN)
    # wake now and then to notice a socket that was removed, however long the idle time
    listener.settimeout(min(idle, _SERVER_WAKE_S))
    mine = os.stat(address).st_ino
    # the kernel reaps each forked process as it ends
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    last = time.monotonic()
    while True:
        try:
            connection, _ = listener.accept()
        except TimeoutError:
            connection = None
        try:
            if os.stat(address).st_ino != mine:
                break
        except OSError:
            break
        if connection is None:
            if time.monotonic() - last > idle:
                break
            continue
        last = time.monotonic()
        if os.fork() == 0:
            listener.close()
            _served(connection)
        connection.close()
    with contextlib.suppress(OSError):
        if os.stat(address).st_ino == mine:
            os.unlink(address)


def _served(connection) -> None:
    """In a forked process: move to the repository, take the connection as stdin and stdout and the named file as
    stderr, then compile as a process the parent started would."""
    import signal

    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.setsid()
    sys.argv = [__file__]
    try:
        request = json.loads(connection.makefile('rb').readline())
        os.chdir(request['root'])
        os.environ.clear()
        os.environ.update(request['env'])
        _take_settings(request['limits'])
        stderr = os.open(request['stderr'], os.O_RDWR | os.O_CREAT, 0o600)
    except (OSError, ValueError, KeyError, TypeError):
        # a repository gone from its path, or a request that is not one: no process, and the caller starts its own
        os._exit(1)
    os.dup2(stderr, 2)
    os.dup2(connection.fileno(), 0)
    os.dup2(connection.fileno(), 1)
    os.close(stderr)
    os.write(1, f'{os.getpid()}\n'.encode())
    sys.stdin = os.fdopen(0, 'r', closefd=False)
    sys.stdout = os.fdopen(1, 'w', buffering=1, closefd=False)
    sys.stderr = os.fdopen(2, 'w', buffering=1, closefd=False)
    main()


def _take_settings(settings: dict) -> None:
    """The umask, niceness, CPUs and resource limits of the run that asked, as a process it started would have them;
    a limit above what the server may grant stays the server's."""
    import resource

    os.umask(settings['umask'])
    os.nice(max(0, settings['nice'] - os.nice(0)))
    with contextlib.suppress(OSError):
        os.sched_setaffinity(0, settings['cpus'])
    for name, limit in settings['rlimits'].items():
        with contextlib.suppress(ValueError, OSError, AttributeError):
            resource.setrlimit(getattr(resource, name), tuple(limit))


if __name__ == '__main__':
    if sys.argv[1:2] == ['--serve']:
        serve(sys.argv[2], float(sys.argv[3]))
    else:
        main()
