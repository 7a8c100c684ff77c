// The project's lint: rules a type checker cannot see. Exits 1 on any finding.
//  - src/ never prints (console.*) or exits (process.exit): only commands/ talks to people
//  - no focused tests (.only) left behind
//  - no file over 400 lines in src/ or commands/
//  - only src/crypto imports @noble
//  - install.sh and the bootstrap script pass shellcheck (when shellcheck is installed)
//  - no call of an async function drops its promise (.ci/floating.ts)
import { Glob } from 'bun'

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
