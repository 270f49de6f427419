# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The bot in CI: `mrbot action` on GitHub Actions and in GitLab merge request pipelines.

`event` is what CI says happened; `github` and `gitlab` read their CI's variables and payloads and act on them;
`report` checks a pull or merge request's diff; `grammar` reads a `/bench` or `/test` comment into a command and
says who may give it when; `answer` decides what to say to a command, the same way for both forges; `job` runs an
authorized command on a GPU runner; `artifacts` is what an unprivileged run leaves and how it is validated; `poster`
puts artifacts on the forge.
"""
