// The import graph of src/ and commands/ (type imports included), and what
// docs/architecture.md asks of it: no import circle across folders, no import
// that runs up the layers, and the named rules (the SDK imports only the wire
// contract, nothing below src/http imports it, Platform code never imports the
// Agent). `bun .ci/imports.ts` prints the figures; .ci/lint.ts fails on them.
import { Glob } from 'bun'
import { dirname, relative, resolve } from 'node:path'

export interface Edge {
  from: string
  to: string
  line: number
}

/** A file's folder for the layer rules: src/<area>, `src` for the loose files at the top, or commands. */
export function folderOf(file: string): string {
  const p = file.split('/')
  if (p[0] !== 'src') return p[0]!
  return p.length > 2 ? `src/${p[1]}` : 'src'
}

const SPEC = /(?:^|[\s;{}])(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\s+from\s+)?(['"])([^'"]+)\1|import\(\s*(['"])([^'"]+)\3\s*\)/gm

/** Every import between files of src/ and commands/ (relative specifiers and muster/client). */
export async function importGraph(root: string): Promise<{ files: string[]; edges: Edge[] }> {
  const files = [...new Glob('{src,commands}/**/*.{ts,js}').scanSync({ cwd: root })].sort()
  const edges: Edge[] = []
  for (const f of files) {
    const text = await Bun.file(`${root}/${f}`).text()
    for (const m of text.matchAll(SPEC)) {
      const spec = m[2] ?? m[4]!
      const to = spec.startsWith('.') ? relative(root, resolve(root, dirname(f), spec)) : spec === 'muster/client' ? 'src/client/index.ts' : null
      if (!to || !/^(src|commands)\//.test(to)) continue
      edges.push({ from: f, to, line: text.slice(0, m.index).split('\n').length })
    }
  }
  return { files, edges }
}

/** Strongly connected groups of more than one file (Tarjan): each is at least one import circle. */
export function circles(files: string[], edges: Edge[]): string[][] {
  const out = new Map<string, string[]>()
  for (const e of edges) out.set(e.from, [...(out.get(e.from) ?? []), e.to])
  let next = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const on = new Set<string>()
  const groups: string[][] = []
  const visit = (v: string) => {
    index.set(v, next)
    low.set(v, next++)
    stack.push(v)
    on.add(v)
    for (const w of out.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) === index.get(v)) {
      const g: string[] = []
      for (let w = ''; w !== v; ) {
        w = stack.pop()!
        on.delete(w)
        g.push(w)
      }
      if (g.length > 1) groups.push(g.sort())
    }
  }
  for (const f of files) if (!index.has(f)) visit(f)
  return groups
}

/**
 * The layers, lowest first: a folder may import its own files and the folders
 * of lower layers, never a higher one (docs/architecture.md draws this).
 * Folders on one layer do not import each other.
 */
export const LAYERS: string[][] = [
  ['src'], // errors, log, version, tunables, addresses, datadir, serve-lock, shutdown, single-flight
  ['src/crypto', 'src/metrics'],
  ['src/wire'],
  ['src/signed', 'src/store', 'src/sockets', 'src/client'],
  ['src/auth', 'src/replicas'],
  ['src/audit'],
  ['src/context'],
  ['src/pki', 'src/ha', 'src/releases'],
  ['src/fabric'],
  ['src/projects', 'src/bootstrap', 'src/dashboard', 'src/sso', 'src/rollouts'],
  ['src/federation', 'src/cloud', 'src/overview', 'src/agent'],
  ['src/http'],
  ['src/listener'],
  ['src/swap'],
  ['src/platform'],
  ['src/doctor', 'src/demo'],
  ['commands'],
]
const rank = new Map(LAYERS.flatMap((folders, i) => folders.map((f) => [f, i] as const)))
/** Folders only the node side and the host tools may import: the Agent's own parts. */
const NODE_SIDE = new Set(['src/agent'])
const MAY_IMPORT_AGENT = new Set(['src/agent', 'src/doctor', 'commands'])
/** What the SDK may import besides itself: the wire contract and the error codes. */
const SDK_MAY = (to: string) => to.startsWith('src/wire/') || to === 'src/errors.ts' || to.startsWith('src/client/')

/** Every import that breaks a layer rule, as `file:line: what`. */
export function layerProblems(edges: Edge[]): string[] {
  const problems: string[] = []
  for (const e of edges) {
    const a = folderOf(e.from)
    const b = folderOf(e.to)
    const at = `${e.from}:${e.line}: imports ${e.to}`
    if (a === 'src/client' && !SDK_MAY(e.to)) {
      problems.push(`${at} (the SDK imports only src/wire, src/errors.ts and its own files)`)
      continue
    }
    if (NODE_SIDE.has(b) && !MAY_IMPORT_AGENT.has(a)) {
      problems.push(`${at} (Platform code never imports the Agent: what both use lives below both)`)
      continue
    }
    if (a === b) continue
    const ra = rank.get(a)
    const rb = rank.get(b)
    if (ra === undefined) problems.push(`${at} (${a} is on no layer: add it to LAYERS in .ci/imports.ts and to docs/architecture.md)`)
    else if (rb === undefined) problems.push(`${at} (${b} is on no layer: add it to LAYERS in .ci/imports.ts and to docs/architecture.md)`)
    else if (rb > ra && b === 'src/http') problems.push(`${at} (nothing below src/http imports it)`)
    else if (rb > ra) problems.push(`${at} (runs up the layers: ${a} is below ${b})`)
    else if (rb === ra) problems.push(`${at} (${a} and ${b} share a layer and do not import each other)`)
  }
  return problems
}

/** A file in a circle inside one folder says why with this marker (a hub with its helpers). */
export const CIRCLE_MARK = 'import-circle:'

/** Circles across folders, and circles inside a folder whose files do not say why. */
export async function circleProblems(root: string, files: string[], edges: Edge[]): Promise<string[]> {
  const problems: string[] = []
  for (const g of circles(files, edges)) {
    const folders = [...new Set(g.map(folderOf))]
    if (folders.length > 1) {
      problems.push(`import circle across ${folders.join(', ')}: ${g.join(' ')}`)
      continue
    }
    let said = false
    for (const f of g) if ((await Bun.file(`${root}/${f}`).text()).includes(CIRCLE_MARK)) said = true
    if (!said) problems.push(`import circle in ${folders[0]} (break it, or say why in a \`// ${CIRCLE_MARK}\` comment): ${g.join(' ')}`)
  }
  return problems
}

if (import.meta.main) {
  const root = process.argv.slice(2).find((a) => !a.startsWith("--")) ?? `${import.meta.dir}/..`
  const { files, edges } = await importGraph(root)
  const groups = circles(files, edges)
  const across = groups.filter((g) => new Set(g.map(folderOf)).size > 1)
  const biggest = [...groups].sort((a, b) => b.length - a.length)[0] ?? []
  // Folder graph: an import between folders that reach each other has no consistent layering.
  const reach = new Map<string, Set<string>>()
  for (const e of edges) if (folderOf(e.from) !== folderOf(e.to)) reach.set(folderOf(e.from), new Set([...(reach.get(folderOf(e.from)) ?? []), folderOf(e.to)]))
  const reaches = (a: string, b: string) => {
    const seen = new Set([a])
    const todo = [a]
    while (todo.length) for (const n of reach.get(todo.pop()!) ?? []) if (n === b) return true; else if (!seen.has(n)) seen.add(n), todo.push(n)
    return false
  }
  const tangled = edges.filter((e) => folderOf(e.from) !== folderOf(e.to) && reaches(folderOf(e.to), folderOf(e.from)))
  const layers = layerProblems(edges)
  process.stdout.write(
    [
      `files ${files.length}, imports ${edges.length}`,
      `import circles (groups of files that reach each other) ${groups.length}, across folders ${across.length}; the largest ${biggest.length} files in ${new Set(biggest.map(folderOf)).size} folders`,
      `imports between folders that import each other (no consistent layering) ${tangled.length}`,
      `imports against the layers in .ci/imports.ts ${layers.length}`,
      ...(process.argv.includes('--verbose') ? [...groups.map((g) => `circle: ${g.join(' ')}`), ...layers] : []),
    ].join('\n') + '\n',
  )
}
