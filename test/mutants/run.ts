// `bun run mutants`: plants each curated bug (test/mutants/<area>.ts) in a
// temporary copy of the project, runs the tests that can see it, and reports
// the bug as killed (a test failed) or SURVIVED (they all passed). The tests:
// first the entry's own `tests` (hints, with its `-t` filter); when those all
// pass, or the entry names none, the test files that import the mutated file
// (at most two imports away, through test helpers too) and its area's test
// folder (test/mutants/select.ts), so a guarantee whose code moved keeps the
// tests that reach it. An entry whose `from` is not found exactly once, whose
// tests do not run, or whose build fails is BROKEN. Exits 1 on any survivor or
// broken entry.
//
//   bun run mutants [--ci] [--only SUBSTRING]... [--jobs N] [--baseline] [--keep] [--list]
//     --ci        only the entries marked `ci: true` (a quick first check; .ci/run runs every entry)
//     --only      run only entries whose name, file or entries file (test/mutants/x.ts) contains SUBSTRING
//     --jobs      mutants run at once (default 2, or $MUTANTS_JOBS)
//     --baseline  first run each entry's tests unmutated: they must pass (checks new entries)
//     --keep      keep the temporary copies (their paths are printed)
//     --verbose   print the test output of every entry
//
// Steps per entry: 1. copy the project (node_modules symlinked), 2. check and
// apply the replacement, 3. build dist/muster when a test to run runs the binary
// (from the mutated copy when the bug is in src/ or commands/, else a pristine
// build shared by all), 4. `bun test --bail HINTS [-t FILTER]` on the entry's engines
// (MUSTER_TEST_ENGINES, SQLite unless it names others), then, when they all passed,
// `bun test --bail NEAR` (the files that can see it), 5. judge, 6. remove the copy.
import { Glob } from 'bun'
import { chmodSync, copyFileSync, cpSync, mkdirSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join, resolve } from 'node:path'
import type { Mutant } from './types.ts'
import { sweepStale as sweepStaleNamespaces } from '../helpers/netns.ts'
import { describeLeftovers, sweepMarked } from '../helpers/leftovers.ts'
import { selection } from './select.ts'

const ROOT = resolve(import.meta.dir, '../..')
const COPIED = ['src', 'commands', 'test', 'bench', 'docs', 'build.ts', 'package.json', 'bunfig.toml', 'tsconfig.json', 'install.sh']
/** A named test runs dist/muster when it is end-to-end or its file mentions the binary helpers. */
const SPAWNS_BINARY = /\b(musterBin|runMuster|startMuster|startServe)\b|dist\/muster/
/** What goes into dist/muster (install.sh too: the Platform serves the copy built into it). */
const BINARY_INPUTS = /^(src|commands)\/|^(build\.ts|package\.json|bunfig\.toml|tsconfig\.json|install\.sh)$/
const TIMEOUT_MS = Number(process.env.MUTANTS_TIMEOUT_MS) || 240_000
/** The files that can see a bug run at most this long once its own tests all passed. */
const NEAR_TIMEOUT_MS = Number(process.env.MUTANTS_NEAR_TIMEOUT_MS) || 600_000
/** How many imports away from the mutated file a test file may be to count as one that can see it. */
const NEAR_DEPTH = Number(process.env.MUTANTS_NEAR_DEPTH) || 2
/** This run's marker (test/helpers/leftovers.ts): .ci/run's, or one of its own. */
const RUN = process.env.MUSTER_TEST_RUN || `mutants-${process.pid}`
let runs = 0

type Verdict = 'killed' | 'SURVIVED' | 'BROKEN'
interface Outcome {
  mutant: Mutant
  source: string
  verdict: Verdict
  seconds: number
  note: string
}

// ---- arguments -------------------------------------------------------------------
const argv = process.argv.slice(2)
const only: string[] = []
let jobs = Number(process.env.MUTANTS_JOBS) || 2
let baseline = false
let keep = false
let listOnly = false
let verbose = false
let ciOnly = false
for (let i = 0; i < argv.length; i++) {
  const a = argv[i]!
  const value = () => {
    const v = argv[++i]
    if (v === undefined) usage(`${a} needs a value`)
    return v
  }
  if (a === '--only') only.push(value())
  else if (a.startsWith('--only=')) only.push(a.slice(7))
  else if (a === '--jobs') jobs = Number(value())
  else if (a === '--baseline') baseline = true
  else if (a === '--keep') keep = true
  else if (a === '--list') listOnly = true
  else if (a === '--verbose') verbose = true
  else if (a === '--ci') ciOnly = true
  else usage(`unknown argument ${a}`)
}
if (!Number.isInteger(jobs) || jobs < 1) usage('--jobs needs a whole number ≥ 1')

function usage(message: string): never {
  process.stderr.write(`mutants: ${message}\nusage: bun run mutants [--ci] [--only SUBSTRING]... [--jobs N] [--baseline] [--keep] [--list] [--verbose]\n`)
  process.exit(2)
}

// ---- loading ---------------------------------------------------------------------
async function loadMutants(): Promise<{ mutant: Mutant; source: string; problem?: string }[]> {
  const files = (await Array.fromAsync(new Glob('test/mutants/*.ts').scan({ cwd: ROOT }))).filter((f) => !['types.ts', 'run.ts', 'select.ts'].includes(basename(f))).sort()
  const out: { mutant: Mutant; source: string; problem?: string }[] = []
  const names = new Set<string>()
  for (const f of files) {
    const mod = (await import(join(ROOT, f))) as { default?: unknown }
    if (!Array.isArray(mod.default)) {
      out.push({ mutant: { name: `${f} (no default export)`, file: f, from: '', to: '', tests: [] }, source: f, problem: 'the file must `export default [...] satisfies Mutant[]`' })
      continue
    }
    for (const m of mod.default as Mutant[]) {
      out.push({ mutant: m, source: f, problem: shapeProblem(m, names) })
      names.add(m.name)
    }
  }
  return out
}

function shapeProblem(m: Mutant, names: Set<string>): string | undefined {
  if (!m || typeof m.name !== 'string' || !m.name) return 'no name'
  if (names.has(m.name)) return 'another entry has the same name'
  if (typeof m.file !== 'string' || typeof m.from !== 'string' || typeof m.to !== 'string') return 'file, from and to must be strings'
  if (m.from === m.to) return '`from` and `to` are the same'
  if (m.tests !== undefined && !Array.isArray(m.tests)) return 'tests must be a list of test files'
  if (m.engines !== undefined && (!Array.isArray(m.engines) || m.engines.length === 0 || m.engines.some((e) => e !== 'sqlite' && e !== 'postgres'))) return "engines must name 'sqlite' and/or 'postgres'"
  for (const t of m.tests ?? []) if (!existsSync(join(ROOT, t))) return `test file ${t} does not exist`
  if (!existsSync(join(ROOT, m.file))) return `${m.file} does not exist`
  const count = readFileSync(join(ROOT, m.file), 'utf8').split(m.from).length - 1
  if (count !== 1) return `\`from\` occurs ${count} times in ${m.file} (it must occur exactly once)`
  if ((m.tests ?? []).length === 0 && near(m).length === 0) return `no tests named, and no test file imports ${m.file} or sits in its area`
  return undefined
}

// ---- one copy of the project -----------------------------------------------------
function copyProject(): string {
  const dir = mkdtempSync(join(tmpdir(), 'muster-mutant-'))
  for (const entry of COPIED) if (existsSync(join(ROOT, entry))) cpSync(join(ROOT, entry), join(dir, entry), { recursive: true })
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir')
  return dir
}

async function build(dir: string): Promise<string | undefined> {
  const p = Bun.spawn(['bun', 'run', 'build.ts'], { cwd: dir, stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  return code === 0 ? undefined : `build failed: ${tail(out + err, 5)}`
}

let pristine: Promise<{ bin?: string; problem?: string }> | undefined
/** dist/muster built once from an unmutated copy, for entries whose bug is outside the binary. */
function pristineBinary() {
  pristine ??= (async () => {
    const dir = copyProject()
    process.on('exit', () => keep || rmSync(dir, { recursive: true, force: true }))
    const problem = await build(dir)
    return problem ? { problem } : { bin: join(dir, 'dist/muster') }
  })()
  return pristine
}

const spawnsBinary = new Map<string, boolean>()
const runsBinary = (t: string) => {
  let v = spawnsBinary.get(t)
  if (v === undefined) spawnsBinary.set(t, (v = t.startsWith('test/e2e/') || SPAWNS_BINARY.test(readFileSync(join(ROOT, t), 'utf8'))))
  return v
}
const needsBinary = (files: string[]) => files.some(runsBinary)

let seen: ReturnType<typeof selection> | undefined
/** The test files that can see the entry's bug, beyond its hints: importers at most two imports away, and its area's folder. */
function near(m: Mutant): string[] {
  seen ??= selection(ROOT)
  return seen.canSee(m.file, m.tests ?? [], NEAR_DEPTH)
}

async function runTests(dir: string, m: Mutant, files: string[], filter: string | undefined, timeoutMs = TIMEOUT_MS): Promise<{ code: number | null; output: string }> {
  // --bail: the first failing test kills the mutant, the rest need not run.
  const cmd = ['bun', 'test', '--bail', '--timeout', '120000', ...files.map((t) => `./${t}`), ...(filter ? ['-t', filter] : [])]
  // Each run of an entry's tests has a marker of its own (below this run's): what it leaves is found and killed after it.
  const marker = `${RUN}.${++runs}`
  const env: Record<string, string | undefined> = { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0', MUSTER_TEST_ENGINES: (m.engines ?? ['sqlite']).join(','), MUSTER_TEST_RUN: marker }
  delete env.MUSTER_TEST_REBUILD
  const p = Bun.spawn(cmd, { cwd: dir, env, stdout: 'pipe', stderr: 'pipe', detached: true })
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    killGroup(p.pid)
  }, timeoutMs)
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  clearTimeout(timer)
  killGroup(p.pid) // whatever the tests left running in their group
  // And what left the group (replicas and Agents start sessions of their own), by the run's marker.
  const left = await sweepMarked(marker)
  if (left.length > 0 && verbose) process.stdout.write(`   ${m.name}: killed ${left.length} process(es) its tests left:\n${describeLeftovers(left)}\n`)
  // A run killed before its afterAll leaves its network namespaces (tests across hosts): remove them now.
  if (process.getuid?.() === 0) sweepStaleNamespaces()
  return { code: timedOut ? null : code, output: out + err }
}

function killGroup(pid: number) {
  try {
    process.kill(-pid, 'SIGKILL')
  } catch {}
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
const failedTests = (output: string) => output.split('\n').filter((l) => l.startsWith('(fail) ')).map((l) => l.slice(7).replace(/ \[[0-9.]+m?s\]$/, ''))
const passedCount = (output: string) => output.split('\n').filter((l) => l.startsWith('(pass) ')).length
const tail = (text: string, n: number) => text.trim().split('\n').slice(-n).join(' | ')

/** Judges one run of an entry's tests: did one fail, did they all pass, or did they not run at all? */
function judge(run: { code: number | null; output: string }, mutated: boolean, timeoutMs = TIMEOUT_MS): { verdict: Verdict; note: string } {
  if (run.code === null) return mutated ? { verdict: 'killed', note: `timed out after ${timeoutMs / 1000} s` } : { verdict: 'BROKEN', note: 'unmutated tests timed out' }
  const failed = failedTests(run.output)
  if (run.code === 0) {
    if (passedCount(run.output) === 0) return { verdict: 'BROKEN', note: 'no test ran' }
    return mutated ? { verdict: 'SURVIVED', note: `${passedCount(run.output)} test(s) passed` } : { verdict: 'killed', note: '' }
  }
  if (failed.length === 0) return { verdict: 'BROKEN', note: `the tests did not run: ${tail(run.output, 4)}` }
  return mutated ? { verdict: 'killed', note: `by ${failed[0]}${failed.length > 1 ? ` (+${failed.length - 1})` : ''}` } : { verdict: 'BROKEN', note: `fails unmutated: ${failed.join('; ')}` }
}

async function runOne(entry: { mutant: Mutant; source: string; problem?: string }): Promise<Outcome> {
  const { mutant: m, source } = entry
  const started = performance.now()
  const done = (verdict: Verdict, note: string): Outcome => ({ mutant: m, source, verdict, note, seconds: (performance.now() - started) / 1000 })
  if (entry.problem) return done('BROKEN', entry.problem)
  // The hints first (with their filter); the files that can see the bug when the hints all pass, or there are none.
  const hints = m.tests ?? []
  const rest = near(m)
  const phases = [
    ...(hints.length > 0 ? [{ files: hints, filter: m.filter, timeoutMs: TIMEOUT_MS, seeking: false }] : []),
    ...(rest.length > 0 ? [{ files: rest, filter: undefined, timeoutMs: NEAR_TIMEOUT_MS, seeking: hints.length > 0 }] : []),
  ]
  const dir = copyProject()
  try {
    // The unmutated tests must pass, or a failure below proves nothing (the first phase's: the hints, or what can see it).
    if (baseline) {
      const first = phases[0]!
      if (needsBinary(first.files)) {
        const problem = (await pristineBinary()).problem ?? (await provideBinary(dir, false))
        if (problem) return done('BROKEN', problem)
      }
      const v = judge(await runTests(dir, m, first.files, first.filter, first.timeoutMs), false)
      if (v.verdict === 'BROKEN') return done('BROKEN', v.note)
    }
    const target = join(dir, m.file)
    const original = readFileSync(target, 'utf8')
    writeFileSync(target, original.replace(m.from, () => m.to))
    let provided = false
    let passed = 0
    const output: string[] = []
    for (const phase of phases) {
      if (!provided && needsBinary(phase.files)) {
        provided = true
        const problem = await provideBinary(dir, BINARY_INPUTS.test(m.file))
        if (problem) return done('BROKEN', problem)
      }
      const run = await runTests(dir, m, phase.files, phase.filter, phase.timeoutMs)
      if (verbose) output.push(run.output)
      const v = judge(run, true, phase.timeoutMs)
      const shown = (note: string) => (verbose ? `${note}\n${output.join('\n').replace(/^/gm, '         | ')}` : note)
      if (phase.seeking && v.verdict === 'BROKEN' && v.note === 'no test ran') continue
      if (phase.seeking && run.code === null) return done('BROKEN', shown(`its tests passed, and the ${phase.files.length} file(s) that can see it did not finish within ${phase.timeoutMs / 1000} s`))
      if (v.verdict === 'killed' && phase.seeking) {
        // Found among files nobody named for it: that test must pass without the bug, or its failure proves nothing (a busy machine).
        const culprit = failedTests(run.output)[0]
        const own = culprit?.split(' > ').pop()
        if (own && run.code !== null) {
          writeFileSync(target, original)
          const rebuilt = provided && BINARY_INPUTS.test(m.file) ? await provideBinary(dir, true) : undefined
          if (rebuilt) return done('BROKEN', rebuilt)
          const again = await runTests(dir, m, phase.files, escapeRegExp(own), phase.timeoutMs)
          if (again.code !== 0) return done('BROKEN', shown(`its tests passed; ${culprit} failed with the bug, and fails without it too`))
        }
        return done('killed', shown(`${v.note}, not by its own tests (${hints.join(', ')}): add the killer to its tests`))
      }
      if (v.verdict !== 'SURVIVED') return done(v.verdict, shown(v.note))
      passed += passedCount(run.output)
    }
    const what = hints.length > 0 && rest.length > 0 ? `its tests and the ${rest.length} file(s) that can see it` : hints.length > 0 ? 'its tests' : `the ${rest.length} file(s) that can see it`
    return done('SURVIVED', `${passed} test(s) passed (${what})${verbose ? `\n${output.join('\n').replace(/^/gm, '         | ')}` : ''}`)
  } finally {
    if (keep) process.stdout.write(`   kept ${dir}\n`)
    else rmSync(dir, { recursive: true, force: true })
  }
}

/** Puts a dist/muster into the copy: built from it when the bug is in the binary, else the shared pristine one. */
async function provideBinary(dir: string, fromCopy: boolean): Promise<string | undefined> {
  rmSync(join(dir, 'dist'), { recursive: true, force: true })
  if (fromCopy) return build(dir)
  const p = await pristineBinary()
  if (p.problem) return p.problem
  mkdirSync(join(dir, 'dist'))
  copyFileSync(p.bin!, join(dir, 'dist/muster'))
  chmodSync(join(dir, 'dist/muster'), 0o755)
  return undefined
}

// ---- main ------------------------------------------------------------------------
const all = await loadMutants()
const chosen = ciOnly ? all.filter((e) => e.mutant.ci === true || e.problem !== undefined) : all
const selected = only.length === 0 ? chosen : chosen.filter((e) => only.some((s) => `${e.mutant.name} ${e.mutant.file} ${e.source}`.toLowerCase().includes(s.toLowerCase())))
if (listOnly) {
  for (const e of selected) {
    const rest = e.problem ? [] : near(e.mutant)
    const hints = e.mutant.tests ?? []
    const then = rest.length > 0 ? `${hints.length > 0 ? '\n     then' : ''} ${rest.length} that can see it: ${rest.slice(0, 4).join(', ')}${rest.length > 4 ? ', …' : ''}` : ''
    process.stdout.write(`${e.mutant.name}\n   ${e.mutant.file} →${hints.length > 0 ? ` ${hints.join(', ')}${e.mutant.filter ? ` -t '${e.mutant.filter}'` : ''}` : ''}${then}${e.problem ? `\n   BROKEN: ${e.problem}` : ''}\n`)
  }
  process.exit(0)
}
if (selected.length === 0) usage(only.length ? `no entry matches ${only.map((s) => `'${s}'`).join(', ')}` : 'no entries in test/mutants/*.ts')

// Slow entries (a build, end-to-end tests) first, so the pool ends together.
const slow = (e: (typeof all)[number]) => Number(!e.problem && needsBinary(e.mutant.tests ?? near(e.mutant)))
const queue = [...selected].sort((a, b) => slow(b) - slow(a))
const t0 = performance.now()
process.stdout.write(`mutants: ${selected.length} entr${selected.length === 1 ? 'y' : 'ies'} from ${new Set(selected.map((e) => e.source)).size} file(s), ${jobs} at a time${baseline ? ', with baselines' : ''}\n`)
const outcomes: Outcome[] = []
await Promise.all(
  Array.from({ length: Math.min(jobs, queue.length) }, async () => {
    for (let e = queue.shift(); e; e = queue.shift()) {
      const o = await runOne(e)
      outcomes.push(o)
      process.stdout.write(`${o.verdict.padEnd(8)} ${o.mutant.name}  (${o.source}, ${o.seconds.toFixed(1)} s)${o.note ? `\n         ${o.note}` : ''}\n`)
    }
  }),
)
const count = (v: Verdict) => outcomes.filter((o) => o.verdict === v).length
process.stdout.write(`mutants: ${count('killed')} killed, ${count('SURVIVED')} survived, ${count('BROKEN')} broken in ${((performance.now() - t0) / 1000).toFixed(0)} s\n`)
for (const o of outcomes.filter((x) => x.verdict !== 'killed')) process.stdout.write(`  ${o.verdict}: ${o.mutant.name} — ${o.mutant.file} (${o.source})\n`)
// The whole list runs in CI: the slowest entries are where a focused test (or a narrower filter) saves the most.
if (outcomes.length > 5) {
  process.stdout.write('slowest:\n')
  for (const o of [...outcomes].sort((a, b) => b.seconds - a.seconds).slice(0, 5)) process.stdout.write(`  ${o.seconds.toFixed(1).padStart(6)} s  ${o.mutant.name} (${o.source})\n`)
}
process.exit(count('SURVIVED') + count('BROKEN') > 0 ? 1 : 0)
