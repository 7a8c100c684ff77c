// Binaries for upgrade tests: this tree compiled with another version baked
// in (the same code, so it updates itself like dist/muster), and faulty
// "releases" (an Agent that exits at start, one that never heartbeats, one
// that kills its replicas) as small executables. Each build is cached under
// /tmp by the SHA-256 of dist/muster, so a later run of the same tree reuses it.
import { createHash } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { musterBin } from './binary.ts'

const ROOT = resolve(import.meta.dir, '../..')

async function treeKey(): Promise<string> {
  const h = createHash('sha256')
  for await (const chunk of Bun.file(await musterBin()).stream()) h.update(chunk)
  return h.digest('hex').slice(0, 16)
}

/** This tree compiled with VERSION `version`. */
export async function buildWithVersion(version: string): Promise<string> {
  const dir = join(tmpdir(), 'muster-builds', await treeKey(), version)
  const bin = join(dir, 'muster')
  if (existsSync(bin)) return bin
  mkdirSync(dir, { recursive: true })
  const tmp = `${bin}.tmp-${process.pid}`
  const p = Bun.spawn(
    ['bun', 'build', './commands/index.ts', '--compile', '--minify', '--sourcemap=none', '--splitting', '--bytecode', '--format=esm', '--no-compile-autoload-dotenv', '--no-compile-autoload-bunfig', '--define', `MUSTER_BUILD_VERSION=${JSON.stringify(version)}`, '--outfile', tmp],
    { cwd: ROOT, stdout: 'ignore', stderr: 'pipe' },
  )
  if ((await p.exited) !== 0) throw new Error(`building ${version} failed: ${await new Response(p.stderr).text()}`)
  renameSync(tmp, bin)
  return bin
}

export type Fault = 'exits-at-start' | 'never-heartbeats' | 'kills-replicas'

/**
 * A faulty release: a small executable the rollout installs as if it were
 * muster. `kills-replicas` kills every process worker/replicas.json names, then
 * waits like a hung Agent.
 */
export function faultyBuild(fault: Fault, dir: string): string {
  mkdirSync(dir, { recursive: true })
  const bin = join(dir, `muster-${fault}`)
  const body: Record<Fault, string> = {
    'exits-at-start': 'echo "faulty build: exiting at start" >&2\nexit 1\n',
    'never-heartbeats': 'echo "faulty build: running, never heartbeating" >&2\nexec sleep 100000\n',
    'kills-replicas': [
      'data=/var/lib/muster',
      'while [ $# -gt 0 ]; do [ "$1" = --data-dir ] && data=$2; shift; done',
      'for pid in $(grep -o \'"pid": *[0-9]*\' "$data/worker/replicas.json" | grep -o \'[0-9]*$\'); do kill -9 "$pid" 2>/dev/null; done',
      'echo "faulty build: killed the replicas" >&2',
      'exec sleep 100000',
      '',
    ].join('\n'),
  }
  writeFileSync(bin, `#!/bin/sh\n# ${fault} (${Date.now()})\n${body[fault]}`)
  chmodSync(bin, 0o755)
  return bin
}
