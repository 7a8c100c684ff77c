// The project's lint: rules a type checker cannot see. Exits 1 on any finding.
//  - src/ never prints (console.*) or exits (process.exit): only commands/ talks to people
//  - no focused tests (.only) left behind
//  - no file over 400 lines in src/ or commands/
//  - only src/crypto imports @noble
//  - install.sh and the bootstrap script pass shellcheck (when shellcheck is installed)
//  - no call of an async function drops its promise (.ci/floating.ts)
//  - the layers (docs/architecture.md, .ci/imports.ts): the SDK imports only
//    src/wire and src/errors.ts; nothing below src/http imports it; Platform
//    code never imports src/agent; no import runs up the layers; no import
//    circle across folders (one inside a folder says why)
//  - MUSTER_* variables are read only through src/tunables.ts
//  - comments cite docs/… or nothing: never the SPEC, an issue number or a
//    file outside the repository
import { Glob } from 'bun'
import { circleProblems, importGraph, layerProblems } from './imports.ts'

const problems: string[] = []
const files = async (pattern: string) => Array.fromAsync(new Glob(pattern).scan({ cwd: `${import.meta.dir}/..` }))

for (const f of await files('src/**/*.ts')) {
  const text = await Bun.file(`${import.meta.dir}/../${f}`).text()
  const lines = text.split('\n')
  lines.forEach((line, i) => {
    if (/\bconsole\.(log|error|warn|info)\(/.test(line) && !f.startsWith('src/client/')) problems.push(`${f}:${i + 1}: console.* in src/ (use src/log.ts)`)
    if (/\bprocess\.exit\(/.test(line)) problems.push(`${f}:${i + 1}: process.exit in src/ (throw a MusterError; commands/ decide the exit code)`)
    if (/from ['"]@noble\//.test(line) && !f.startsWith('src/crypto/')) problems.push(`${f}:${i + 1}: @noble imported outside src/crypto/`)
  })
  if (lines.length > 400) problems.push(`${f}: ${lines.length} lines (split past 400)`)
}
for (const f of await files('commands/**/*.ts')) {
  const n = (await Bun.file(`${import.meta.dir}/../${f}`).text()).split('\n').length
  if (n > 400) problems.push(`${f}: ${n} lines (split past 400)`)
}
// A MUSTER_* variable read anywhere but src/tunables.ts (env.MUSTER_X, env['MUSTER_X']).
const ENV_READ = /(?:\benv|process\.env|Bun\.env)\s*(?:\.\s*MUSTER_|\[\s*['"`]MUSTER_)/
for (const f of [...(await files('src/**/*.ts')), ...(await files('commands/**/*.ts')), ...(await files('bench/**/*.ts'))]) {
  if (f === 'src/tunables.ts') continue
  const lines = (await Bun.file(`${import.meta.dir}/../${f}`).text()).split('\n')
  lines.forEach((line, i) => {
    if (ENV_READ.test(line)) problems.push(`${f}:${i + 1}: MUSTER_* read outside src/tunables.ts (add it there with its default and meaning; read it with tunable() or tunableNumber())`)
  })
}

// Citations a reader of the repository cannot follow, in comments.
const CITATION = /\bSPEC\s*§|\bSPEC\s*$|BUN-NOTES|\b[Ii]ssues? \d|(?:^|[\s(,])#\d{1,2}(?:\b|[–-])(?<!ret #\d)/
const commentOf = (line: string, inBlock: boolean): string | null => {
  if (inBlock || /^\s*(\*|\/\*)/.test(line)) return line
  const i = line.search(/(^|[^:'"`\\])\/\/(?!\/)/)
  return i >= 0 ? line.slice(i) : /^\s*#/.test(line) ? line : null
}
for (const f of await files('{src,commands,test,bench,.ci}/**/*.{ts,js,sh}')) {
  if (f === '.ci/lint.ts') continue
  let inBlock = false
  ;(await Bun.file(`${import.meta.dir}/../${f}`).text()).split('\n').forEach((line, i) => {
    const c = commentOf(line, inBlock)
    if (/\/\*/.test(line) && !/\*\//.test(line)) inBlock = true
    if (/\*\//.test(line)) inBlock = false
    if (c !== null && CITATION.test(c)) problems.push(`${f}:${i + 1}: a comment cites the SPEC, an issue or BUN-NOTES: cite docs/… or say the reason itself`)
  })
}

{
  const root = `${import.meta.dir}/..`
  const { files: all, edges } = await importGraph(root)
  problems.push(...layerProblems(edges), ...(await circleProblems(root, all, edges)))
}

for (const f of await files('test/**/*.ts')) {
  const text = await Bun.file(`${import.meta.dir}/../${f}`).text()
  if (/\b(test|it|describe)\.only\(/.test(text)) problems.push(`${f}: focused test (.only)`)
}
for (const script of ['install.sh', 'src/bootstrap/bootstrap.sh']) {
  if (!Bun.which('shellcheck') || !(await Bun.file(`${import.meta.dir}/../${script}`).exists())) continue
  const r = Bun.spawnSync(['shellcheck', '-s', 'sh', script], { cwd: `${import.meta.dir}/..` })
  if (r.exitCode !== 0) problems.push(`${script}: shellcheck\n${r.stdout.toString()}`)
}

{
  const r = Bun.spawnSync(['bun', `${import.meta.dir}/floating.ts`])
  if (r.exitCode !== 0) problems.push(r.stderr.toString().trim())
}

if (problems.length > 0) {
  process.stderr.write(`lint: ${problems.length} problem(s)\n${problems.join('\n')}\n`)
  process.exit(1)
}
process.stdout.write('lint: ok\n')
