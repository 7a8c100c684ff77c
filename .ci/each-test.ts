// Order independence: runs every test alone (`bun test FILE -t '^NAME$'`), so a
// test that only passes after the ones before it shows up. Slow (one process
// per test); run it by hand or in a nightly job, not on every commit.
//
//   bun run .ci/each-test.ts [FILE...] [--jobs N] [--names-from LOG]
// --names-from LOG: take the test names from the output of a whole run (`bun test > LOG 2>&1`)
// instead of running each file whole first.
import { Glob } from 'bun'
import { resolve } from 'node:path'

const ROOT = resolve(import.meta.dir, '..')
const args = process.argv.slice(2)
let jobs = 2
let namesFrom: string | undefined
const files: string[] = []
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--jobs') jobs = Number(args[++i])
  else if (args[i] === '--names-from') namesFrom = args[++i]
  else files.push(args[i]!)
}
if (files.length === 0) files.push(...(await Array.fromAsync(new Glob('test/**/*.test.ts').scan({ cwd: ROOT }))).sort())

async function bunTest(file: string, filter?: string): Promise<{ code: number; output: string }> {
  const p = Bun.spawn(['bun', 'test', '--timeout', '120000', `./${file}`, ...(filter ? ['-t', filter] : [])], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe', env: { ...process.env, NO_COLOR: '1' } })
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  return { code, output: out + err }
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
/** Test names as bun prints them ("describe > test"), from one run of the whole file. */
const namesIn = (output: string) => [...output.matchAll(/^\((?:pass|fail)\) (.*?)(?: \[[0-9.]+m?s\])?$/gm)].map((m) => m[1]!)

const work: { file: string; name: string }[] = []
/** File headers (`test/x.test.ts:`) and the tests under each, from a whole run's output. */
function namesByFile(log: string): Map<string, string[]> {
  const out = new Map<string, string[]>()
  let file: string | undefined
  for (const line of log.split('\n')) {
    const header = /^(test\/\S+\.test\.ts):$/.exec(line)
    if (header) out.set((file = header[1]!), out.get(header[1]!) ?? [])
    else if (file) out.get(file)!.push(...namesIn(line))
  }
  return out
}
const known = namesFrom ? namesByFile(await Bun.file(namesFrom).text()) : undefined
for (const file of files) {
  if (known) {
    const names = known.get(file) ?? []
    if (names.length === 0) process.stdout.write(`${file}: no test of it in ${namesFrom}\n`)
    for (const name of names) work.push({ file, name })
    continue
  }
  const whole = await bunTest(file)
  const names = namesIn(whole.output)
  if (names.length === 0) process.stdout.write(`${file}: no test ran as a whole (${whole.code === 0 ? 'all skipped?' : 'it fails'})\n`)
  for (const name of names) work.push({ file, name })
}
process.stdout.write(`each-test: ${work.length} tests in ${files.length} file(s), ${jobs} at a time\n`)

const failures: string[] = []
const queue = [...work]
await Promise.all(
  Array.from({ length: jobs }, async () => {
    for (let w = queue.shift(); w; w = queue.shift()) {
      // bun matches -t against the describe and test names joined by spaces
      const r = await bunTest(w.file, `^${escape(w.name.split(' > ').join(' '))}$`)
      const ran = /^\(pass\) /m.test(r.output)
      const ok = r.code === 0 && ran
      process.stdout.write(`${ok ? 'pass' : 'FAIL'}  ${w.file}: ${w.name}\n`)
      if (!ok) {
        failures.push(`${w.file}: ${w.name}`)
        process.stdout.write(`${r.output.trim().split('\n').slice(-25).map((l) => `      | ${l}`).join('\n')}\n`)
      }
    }
  }),
)
process.stdout.write(`each-test: ${work.length - failures.length} of ${work.length} pass alone\n${failures.map((f) => `  FAIL ${f}\n`).join('')}`)
process.exit(failures.length > 0 ? 1 : 0)
