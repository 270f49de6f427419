# Copyright (c) 2026, the mrbot authors.
# SPDX-License-Identifier: MIT
"""The faces of mrbot's commands, one module per command: its arguments (`add_arguments`), its entry (`run(args)`,
which returns the exit code) and its printing; `record_file` is the `--json FILE` that `test` and `bench` share. The
stages they call, and that other code calls too, stay in the stages' layer."""
