// Which test files can see a planted bug: those that import the mutated file
// (directly or through a chain of imports, test helpers included; the runner
// takes those at most two imports away, since nearly every test reaches all of
// src/ through the Platform) and the test folder of its area
// (src/<area>/… → test/<area>/). An entry's own
// `tests` are hints run first; these are run when the hints all pass, so a
// guarantee whose code moved keeps the tests that reach it.
import { Glob } from 'bun'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, relative, resolve } from 'node:path'

const SPEC = /(?:^|[\s;{}(])(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\s+from\s+)?(['"])([^'"]+)\1|import\(\s*(['"])([^'"]+)\3\s*\)/gm
const RESOLVE = ['', '.ts', '/index.ts', '.js']

/** The files `file` imports (relative specifiers and muster/client), as paths from the root. */
function importsOf(root: string, file: string): string[] {
  let text: string
  try {
    text = readFileSync(`${root}/${file}`, 'utf8')
  } catch {
    return []
  }
  const out: string[] = []
  for (const m of text.matchAll(SPEC)) {
    const spec = m[2] ?? m[4]!
    const base = spec.startsWith('.') ? relative(root, resolve(root, dirname(file), spec)) : spec === 'muster/client' ? 'src/client/index.ts' : null
    if (!base || base.startsWith('..')) continue
    const found = RESOLVE.map((ext) => base + ext).find((p) => existsSync(`${root}/${p}`) && !p.endsWith('/'))
    if (found) out.push(found)
  }
  return out
}

export interface Selection {
  /** Test files that import `file`, directly or not (at most `depth` imports away), nearest first. */
  importers(file: string, depth?: number): string[]
  /** The test files of `file`'s area folder. */
  area(file: string): string[]
  /** Both, nearest importers first, without the `except` files. */
  canSee(file: string, except?: string[], depth?: number): string[]
}

export function selection(root: string): Selection {
  const tests = [...new Glob('test/**/*.test.ts').scanSync({ cwd: root })].sort()
  // For each test file, every file it reaches and how many imports away.
  const reach = new Map<string, Map<string, number>>()
  const direct = new Map<string, string[]>()
  const edges = (f: string) => {
    let e = direct.get(f)
    if (!e) direct.set(f, (e = importsOf(root, f)))
    return e
  }
  for (const t of tests) {
    const seen = new Map<string, number>([[t, 0]])
    let frontier = [t]
    for (let depth = 1; frontier.length > 0; depth++) {
      const next: string[] = []
      for (const f of frontier) {
        for (const g of edges(f)) {
          if (seen.has(g)) continue
          seen.set(g, depth)
          next.push(g)
        }
      }
      frontier = next
    }
    reach.set(t, seen)
  }
  const importers = (file: string, depth = Infinity) =>
    tests
      .filter((t) => t !== file && (reach.get(t)!.get(file) ?? Infinity) <= depth)
      .sort((a, b) => reach.get(a)!.get(file)! - reach.get(b)!.get(file)! || a.localeCompare(b))
  const area = (file: string) => {
    const m = /^src\/([^/]+)\//.exec(file)
    return m ? tests.filter((t) => t.startsWith(`test/${m[1]}/`)) : []
  }
  return {
    importers,
    area,
    canSee(file, except = [], depth = Infinity) {
      const skip = new Set(except)
      return [...new Set([...importers(file, depth), ...area(file)])].filter((t) => !skip.has(t))
    },
  }
}
