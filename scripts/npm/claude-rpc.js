#!/usr/bin/env node
// claude-rpc's npm entry point: runs the native binary from the platform
// package npm installed alongside (one of the optionalDependencies), passing
// on the arguments, stdio, signals and the exit status.
"use strict";

const { spawn } = require("child_process");
const path = require("path");

const platform = `${process.platform}-${process.arch}`;
const pkg = `@claude-rpc/claude-rpc-${platform}`;

let bin;
try {
  const dir = path.dirname(require.resolve(`${pkg}/package.json`));
  bin = path.join(dir, "bin", process.platform === "win32" ? "claude-rpc.exe" : "claude-rpc");
} catch (err) {
  process.stderr.write(
    `claude-rpc: no binary for this platform (${platform}): the package ${pkg} is not installed.\n` +
      `claude-rpc ships binaries for linux-x64, linux-arm64, darwin-x64, darwin-arm64 and win32-x64.\n` +
      `If yours is one of them, reinstall without --omit=optional / --no-optional so npm installs ${pkg}.\n`
  );
  process.exit(1);
}

const child = spawn(bin, process.argv.slice(2), { stdio: "inherit", windowsHide: true });

// Pass the signals a terminal or supervisor sends on to the binary; the
// wrapper exits when the binary does.
const signals = ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGBREAK"];
const forward = (sig) => {
  try {
    child.kill(sig);
  } catch {
    // the child has already exited
  }
};
for (const sig of signals) {
  try {
    process.on(sig, forward);
  } catch {
    // not a signal on this platform (SIGBREAK off Windows, …)
  }
}

child.on("error", (err) => {
  process.stderr.write(`claude-rpc: cannot run ${bin}: ${err.message}\n`);
  process.exit(1);
});

child.on("exit", (code, signal) => {
  if (signal) {
    // Die of the same signal, so our parent sees what the binary saw.
    for (const sig of signals) process.removeAllListeners(sig);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code === null ? 1 : code);
});
