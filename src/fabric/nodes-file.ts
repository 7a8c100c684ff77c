// Operator-declared nodes (docs/nodes.md): `serve --nodes-file F` holds
// {"nodes":[{"name","labels"?,"drained"?}]}. A declared name is reserved: it
// enrolls only with an enrollment issued for it (never a fleet token, never the
// legacy shared token), and the fields the file gives win over what the node
// reports. The file is checked whole before it is used; a bad one is refused
// with its line and reason, and a reload keeps the set already running.
import { readFileSync } from 'node:fs'
import { MusterError } from '../errors.ts'
import { log } from '../log.ts'
import { NODE_NAME } from '../wire/validate.ts'
import { labelsProblem, type Labels } from '../wire/labels.ts'

export interface DeclaredNode {
  name: string
  /** When given, these are the node's labels, whatever it reported. */
  labels?: Labels
  /** When given, the node is (or is not) drained, whatever an operator's drain says. */
  drained?: boolean
}

export class NodesFileError extends Error {
  constructor(
    readonly line: number,
    readonly reason: string,
  ) {
    super(`line ${line}: ${reason}`)
  }
}

const MAX_BYTES = 1024 * 1024
const MAX_NODES = 10_000

/** The declared nodes in `text`, by name; throws NodesFileError with the line at fault. */
export function parseNodesFile(text: string): Map<string, DeclaredNode> {
  const root = new JsonReader(text).document()
  if (root.kind !== 'object') throw new NodesFileError(root.line, 'expected an object like {"nodes":[{"name":"w1"}]}')
  const nodes = root.fields.get('nodes')
  for (const f of root.fields.values()) if (f.key !== 'nodes') throw new NodesFileError(f.line, `unknown field "${f.key}" (the file has only "nodes")`)
  if (!nodes) throw new NodesFileError(root.line, 'missing "nodes": expected {"nodes":[{"name":"w1"}]}')
  if (nodes.value.kind !== 'array') throw new NodesFileError(nodes.line, '"nodes" must be a list')
  if (nodes.value.items.length > MAX_NODES) throw new NodesFileError(nodes.line, `at most ${MAX_NODES} nodes`)
  const out = new Map<string, DeclaredNode & { line: number }>()
  nodes.value.items.forEach((item, i) => {
    const at = `nodes[${i}]`
    if (item.kind !== 'object') throw new NodesFileError(item.line, `${at} must be an object like {"name":"w1"}`)
    const d: DeclaredNode & { line: number } = { name: '', line: item.line }
    for (const f of item.fields.values()) {
      const v = f.value
      if (f.key === 'name') {
        if (v.kind !== 'string' || !NODE_NAME.test(v.value)) throw new NodesFileError(f.line, `${at}.name: expected a name like worker-1 (lowercase letters, digits, dashes; at most 63)`)
        if (v.value === 'local') throw new NodesFileError(f.line, `${at}.name: local is the Platform's own node and cannot be declared`)
        d.name = v.value
      } else if (f.key === 'labels') {
        if (v.kind !== 'object') throw new NodesFileError(f.line, `${at}.labels must be an object like {"role":"build"}`)
        const labels: Record<string, unknown> = {}
        for (const l of v.fields.values()) labels[l.key] = l.value.kind === 'string' ? l.value.value : null
        const problem = labelsProblem(labels)
        if (problem) {
          const bad = [...v.fields.values()].find((l) => labelsProblem({ [l.key]: labels[l.key] }) !== null)
          throw new NodesFileError(bad?.line ?? f.line, `${at}.labels: ${problem}`)
        }
        d.labels = labels as Labels
      } else if (f.key === 'drained') {
        if (v.kind !== 'boolean') throw new NodesFileError(f.line, `${at}.drained must be true or false`)
        d.drained = v.value
      } else throw new NodesFileError(f.line, `${at}: unknown field "${f.key}" (name, labels, drained)`)
    }
    if (!d.name) throw new NodesFileError(item.line, `${at}: missing "name"`)
    const first = out.get(d.name)
    if (first) throw new NodesFileError(item.line, `${at}: ${d.name} is declared twice (first on line ${first.line})`)
    out.set(d.name, d)
  })
  return new Map([...out].map(([name, { line: _line, ...d }]) => [name, d]))
}

/** Reads and checks the file; throws NodesFileError (line 0 when the file cannot be read). */
export function readNodesFile(path: string): Map<string, DeclaredNode> {
  let text: string
  try {
    const bytes = readFileSync(path)
    if (bytes.length > MAX_BYTES) throw new NodesFileError(0, `larger than ${MAX_BYTES} bytes`)
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch (e) {
    if (e instanceof NodesFileError) throw e
    throw new NodesFileError(0, `cannot read it: ${(e as Error).message}`)
  }
  return parseNodesFile(text)
}

export type NodesFileReload = { ok: true; nodes: number } | { ok: false; error: string }

/** The running set: replaced only by a file that checks out whole. */
export class DeclaredNodes {
  private nodes = new Map<string, DeclaredNode>()

  private constructor(readonly file: string | undefined) {}

  /** The declared nodes of serve --nodes-file (none without one); a bad file refuses the start with its line and reason. */
  static open(file: string | undefined): DeclaredNodes {
    const d = new DeclaredNodes(file)
    try {
      d.load()
    } catch (e) {
      if (e instanceof NodesFileError) throw new MusterError('not-configured', `--nodes-file ${file} ${e.message}`)
      throw e
    }
    return d
  }

  /** Reads the file (nothing when none was given); on a bad file throws and keeps the current set. */
  load(): number {
    if (this.file === undefined) return 0
    const fresh = readNodesFile(this.file)
    this.nodes = fresh
    return fresh.size
  }

  /**
   * Reads the file again (SIGHUP): a bad file is logged with its line and
   * reason and the running set is kept; `changed` is told every name whose
   * declaration may have changed.
   */
  async reloadFile(changed: (name: string) => Promise<void>): Promise<NodesFileReload> {
    if (this.file === undefined) return { ok: true, nodes: 0 }
    const before = this.names()
    let count: number
    try {
      count = this.load()
    } catch (e) {
      if (!(e instanceof NodesFileError)) throw e
      const error = `${this.file} ${e.message}`
      log.error(`nodes file not reloaded, keeping the ${before.length} declared node(s) in force: ${error}`)
      return { ok: false, error }
    }
    log.info(`nodes file ${this.file} reloaded: ${count} declared node(s)`)
    for (const name of new Set([...before, ...this.names()])) await changed(name)
    return { ok: true, nodes: count }
  }

  get(name: string): DeclaredNode | undefined {
    return this.nodes.get(name)
  }

  has(name: string): boolean {
    return this.nodes.has(name)
  }

  names(): string[] {
    return [...this.nodes.keys()]
  }
}

// ---- a JSON reader that knows lines ---------------------------------------------
// JSON.parse says neither where a syntax error is nor where a value sits, and
// the operator needs the line of whatever is wrong.

type JsonNode =
  | { kind: 'object'; line: number; fields: Map<string, { key: string; line: number; value: JsonNode }> }
  | { kind: 'array'; line: number; items: JsonNode[] }
  | { kind: 'string'; line: number; value: string }
  | { kind: 'number'; line: number; value: number }
  | { kind: 'boolean'; line: number; value: boolean }
  | { kind: 'null'; line: number }

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y
const MAX_DEPTH = 32

class JsonReader {
  private i = 0
  private line = 1

  constructor(private readonly text: string) {}

  document(): JsonNode {
    const v = this.value(0)
    this.space()
    if (this.i < this.text.length) this.syntaxError('unexpected text after the end of the document')
    return v
  }

  private syntaxError(reason: string): never {
    throw new NodesFileError(this.line, `not valid JSON: ${reason}`)
  }

  private space(): void {
    for (; this.i < this.text.length; this.i++) {
      const c = this.text[this.i]
      if (c === '\n') this.line++
      else if (c !== ' ' && c !== '\t' && c !== '\r') return
    }
  }

  private value(depth: number): JsonNode {
    if (depth > MAX_DEPTH) this.syntaxError(`nested deeper than ${MAX_DEPTH}`)
    this.space()
    const line = this.line
    const c = this.text[this.i]
    if (c === '{') return this.object(depth, line)
    if (c === '[') return this.array(depth, line)
    if (c === '"') return { kind: 'string', line, value: this.string() }
    for (const [word, node] of [['true', { kind: 'boolean', line, value: true }], ['false', { kind: 'boolean', line, value: false }], ['null', { kind: 'null', line }]] as const) {
      if (this.text.startsWith(word, this.i)) {
        this.i += word.length
        return node
      }
    }
    NUMBER.lastIndex = this.i
    const m = NUMBER.exec(this.text)
    if (m) {
      this.i += m[0].length
      return { kind: 'number', line, value: Number(m[0]) }
    }
    this.syntaxError(c === undefined ? 'the document ends early' : `unexpected ${JSON.stringify(c)}`)
  }

  private string(): string {
    const start = this.i
    for (this.i++; this.i < this.text.length; this.i++) {
      const c = this.text[this.i]
      if (c === '\\') this.i++
      else if (c === '"') break
      else if (c === '\n') this.syntaxError('a string runs past the end of its line')
    }
    if (this.i >= this.text.length) this.syntaxError('a string is not closed')
    this.i++
    try {
      return JSON.parse(this.text.slice(start, this.i)) as string
    } catch {
      this.syntaxError('a string has a bad escape or control character')
    }
  }

  private object(depth: number, line: number): JsonNode {
    const fields = new Map<string, { key: string; line: number; value: JsonNode }>()
    this.i++
    this.space()
    if (this.text[this.i] === '}') {
      this.i++
      return { kind: 'object', line, fields }
    }
    for (;;) {
      this.space()
      const keyLine = this.line
      if (this.text[this.i] !== '"') this.syntaxError('expected a field name in double quotes')
      const key = this.string()
      if (fields.has(key)) throw new NodesFileError(keyLine, `field "${key}" appears twice`)
      this.space()
      if (this.text[this.i] !== ':') this.syntaxError(`expected : after "${key}"`)
      this.i++
      fields.set(key, { key, line: keyLine, value: this.value(depth + 1) })
      this.space()
      const c = this.text[this.i++]
      if (c === '}') return { kind: 'object', line, fields }
      if (c !== ',') this.syntaxError(c === undefined ? 'the document ends inside an object' : 'expected , or } between fields')
    }
  }

  private array(depth: number, line: number): JsonNode {
    const items: JsonNode[] = []
    this.i++
    this.space()
    if (this.text[this.i] === ']') {
      this.i++
      return { kind: 'array', line, items }
    }
    for (;;) {
      items.push(this.value(depth + 1))
      this.space()
      const c = this.text[this.i++]
      if (c === ']') return { kind: 'array', line, items }
      if (c !== ',') this.syntaxError(c === undefined ? 'the document ends inside a list' : 'expected , or ] between items')
    }
  }
}
