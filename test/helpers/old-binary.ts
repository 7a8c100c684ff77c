// The binary of an earlier commit, for upgrade tests: the tree is exported
// with `git archive` into a temp directory (sharing this checkout's
// node_modules) and compiled once per commit; later runs reuse it.
import { existsSync, mkdirSync, renameSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'

const ROOT = resolve(import.meta.dir, '../..')

/** The last commit before the Platform CA: the listener was pinned by its own self-signed certificate. */
export const PRE_CA_COMMIT = '152516a99bbc09cd8ee3f1611e6483074134339b'

/** Whether this checkout holds `commit` (a shallow clone may not). */
export function hasCommit(commit: string): boolean {
  return Bun.spawnSync(['git', 'cat-file', '-e', `${commit}^{commit}`], { cwd: ROOT, stdout: 'ignore', stderr: 'ignore' }).exitCode === 0
}

/** Path of the compiled binary of `commit`. */
export async function oldBinary(commit: string): Promise<string> {
  const dir = join(tmpdir(), `muster-old-${commit.slice(0, 12)}`)
  const bin = join(dir, 'dist', 'muster')
  if (existsSync(bin)) return bin
  const work = `${dir}.tmp-${process.pid}`
  rmSync(work, { recursive: true, force: true })
  mkdirSync(work, { recursive: true })
  const archive = Bun.spawn(['git', 'archive', commit], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
  const untar = Bun.spawn(['tar', '-x', '-C', work], { stdin: archive.stdout, stderr: 'pipe' })
  if ((await archive.exited) !== 0 || (await untar.exited) !== 0) throw new Error(`git archive ${commit} failed`)
  symlinkSync(join(ROOT, 'node_modules'), join(work, 'node_modules'))
  const build = Bun.spawn(['bun', 'run', 'build.ts'], { cwd: work, stdout: 'ignore', stderr: 'pipe' })
  if ((await build.exited) !== 0) throw new Error(`building ${commit} failed: ${await new Response(build.stderr).text()}`)
  rmSync(dir, { recursive: true, force: true })
  renameSync(work, dir)
  return bin
}
