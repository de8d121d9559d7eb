// Starting the built binaries for the browser test: `tollgate-mock` and `tollgate` on
// ephemeral loopback ports (each prints the address it listens on), stopped when the test ends.

import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/** The directory holding `tollgate` and `tollgate-mock`: $TOLLGATE_BIN_DIR or target/debug. */
export function binDir(repo) {
  return process.env.TOLLGATE_BIN_DIR ?? resolve(repo, process.env.CARGO_TARGET_DIR ?? 'target', 'debug');
}

const children = [];

/** Kills every process started here. */
export function stopAll() {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
}
process.on('exit', stopAll);

/** Spawns `bin args`, resolves with the first match of `pattern` in its output (20 s at most). */
function start(bin, args, pattern, env) {
  if (!existsSync(bin)) throw new Error(`binary not found: ${bin} (run cargo build --bins, or set TOLLGATE_BIN_DIR)`);
  const child = spawn(bin, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let log = '';
  return new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`${bin} did not start within 20 s:\n${log}`)), 20_000);
    const seen = (chunk) => {
      log += chunk.toString();
      const m = log.match(pattern);
      if (m) {
        clearTimeout(timer);
        ok({ url: m[1], child, log: () => log });
      }
    };
    child.stdout.on('data', seen);
    child.stderr.on('data', seen);
    child.on('exit', (code) => fail(new Error(`${bin} exited (${code}) before listening:\n${log}`)));
  });
}

/** The mock upstream (generated answers, no fixtures needed). */
export function startMock(dir) {
  return start(resolve(dir, 'tollgate-mock'), ['--host', '127.0.0.1', '--port', '0'],
    /tollgate-mock listening on (http:\/\/127\.0\.0\.1:\d+)/, process.env);
}

/** The gateway with `config` (YAML) in a fresh temp directory (its SQLite store beside it). */
export function startGateway(dir, config) {
  const work = mkdtempSync(join(tmpdir(), 'tollgate-ui-'));
  const path = join(work, 'config.yaml');
  writeFileSync(path, config);
  const env = { ...process.env, RUST_LOG: 'info', NO_COLOR: '1' };
  for (const k of ['LITELLM_MASTER_KEY', 'DATABASE_URL', 'UI_USERNAME', 'UI_PASSWORD', 'PORT', 'HOST']) delete env[k];
  return start(resolve(dir, 'tollgate'), ['--config', path, '--port', '0', '--host', '127.0.0.1'],
    /listening on (http:\/\/127\.0\.0\.1:\d+)/, env);
}
