// The lint holds the layers (docs/architecture.md): in a copy of the tree it
// passes, and with one violation of each rule planted it fails naming each.
import { describe, expect, test } from 'bun:test'
import { appendFileSync, cpSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { tmpDir } from '../helpers/tmp.ts'

const ROOT = join(import.meta.dir, '../..')
const lint = (dir: string) => {
  const r = Bun.spawnSync(['bun', '.ci/lint.ts'], { cwd: dir, stdout: 'pipe', stderr: 'pipe' })
  return { code: r.exitCode, out: r.stdout.toString() + r.stderr.toString() }
}
const copyTree = (to: string) => {
  for (const part of ['src', 'commands', 'test', 'bench', '.ci', 'docs', 'install.sh', 'package.json', 'build.ts']) cpSync(join(ROOT, part), join(to, part), { recursive: true })
}
const plant = (dir: string, file: string, line: string) => appendFileSync(join(dir, file), `\n${line}\n`)

describe('the layer lint', () => {
  test('passes on the tree as it is, and fails on a planted violation of each rule, naming it', () => {
    using t = tmpDir('muster-lint-')
    copyTree(t.path)
    expect(lint(t.path)).toMatchObject({ code: 0 })

    plant(t.path, 'src/client/nodes.ts', "import type { Fabric } from '../fabric/fabric.ts'\nexport type Planted = Fabric")
    plant(t.path, 'src/fabric/glob.ts', "import type { Services } from '../http/services.ts'\nexport type Planted = Services")
    plant(t.path, 'src/projects/local-node.ts', "import type { AgentConfig } from '../agent/files.ts'\nexport type Planted = AgentConfig")
    plant(t.path, 'src/wire/labels.ts', "import type { Store } from '../store/db.ts'\nexport type Planted = Store")
    // A circle across folders: errors.ts (the base) imports what imports it.
    plant(t.path, 'src/errors.ts', "import type { parseCertificate } from './crypto/x509.ts'\nexport type Planted = typeof parseCertificate")
    // A circle inside a folder that says nothing about why.
    plant(t.path, 'src/replicas/procs.ts', "import type { Runner } from './runner.ts'\nexport type Planted = Runner")
    plant(t.path, 'src/agent/backoff.ts', "export const planted = process.env.MUSTER_PLANTED_MS")
    plant(t.path, 'src/projects/redact.ts', '// Masked for viewers (SPEC §16.6).')
    plant(t.path, 'test/log.test.ts', '// see issue 31 for the attack')
    const { code, out } = lint(t.path)
    expect(code).toBe(1)
    expect(out).toContain('src/client/nodes.ts')
    expect(out).toContain('the SDK imports only src/wire, src/errors.ts and its own files')
    expect(out).toMatch(/src\/fabric\/glob\.ts:\d+: imports src\/http\/services\.ts \(nothing below src\/http imports it\)/)
    expect(out).toMatch(/src\/projects\/local-node\.ts:\d+: imports src\/agent\/files\.ts \(Platform code never imports the Agent/)
    expect(out).toMatch(/src\/wire\/labels\.ts:\d+: imports src\/store\/db\.ts \(runs up the layers: src\/wire is below src\/store\)/)
    expect(out).toMatch(/import circle across [^:\n]*src\/crypto[^:\n]*: [^\n]*src\/crypto\/x509\.ts[^\n]*src\/errors\.ts/)
    expect(out).toMatch(/import circle in src\/replicas .*src\/replicas\/procs\.ts/)
    expect(out).toMatch(/src\/agent\/backoff\.ts:\d+: MUSTER_\* read outside src\/tunables\.ts/)
    expect(out).toMatch(/src\/projects\/redact\.ts:\d+: a comment cites the SPEC/)
    expect(out).toMatch(/test\/log\.test\.ts:\d+: a comment cites the SPEC, an issue or BUN-NOTES/)
  }, 60_000)

  test('a hub may keep a circle inside its folder when one of its files says why', () => {
    using t = tmpDir('muster-lint-')
    copyTree(t.path)
    plant(t.path, 'src/replicas/procs.ts', "import type { Runner } from './runner.ts'\nexport type Planted = Runner")
    expect(lint(t.path).out).toContain('import circle in src/replicas')
    const runner = join(t.path, 'src/replicas/runner.ts')
    writeFileSync(runner, `// import-circle: planted by the test, and said so.\n${readFileSync(runner, 'utf8')}`)
    expect(lint(t.path)).toMatchObject({ code: 0 })
  }, 60_000)
})
