// Finds calls to this project's async functions whose promise is dropped: a
// statement that calls one without await, return, void, .then/.catch, or
// assignment. Such a call runs detached: its errors go unhandled, and a check
// it makes (authentication!) is not waited for. Prints file:line per finding.
import { Glob } from 'bun'

const root = `${import.meta.dir}/..`
const files = [...(await Array.fromAsync(new Glob('src/**/*.ts').scan({ cwd: root }))), ...(await Array.fromAsync(new Glob('commands/**/*.ts').scan({ cwd: root })))]
const texts = new Map<string, string>()
for (const f of files) texts.set(f, await Bun.file(`${root}/${f}`).text())

// Names declared async (functions, methods, arrow consts) anywhere in src/ or commands/.
const asyncNames = new Set<string>()
for (const text of texts.values()) {
  for (const m of text.matchAll(/\basync\s+function\s+(\w+)/g)) asyncNames.add(m[1]!)
  for (const m of text.matchAll(/^\s*(?:(?:private|public|protected|static|readonly)\s+)*async\s+(\w+)\s*[(<]/gm)) asyncNames.add(m[1]!)
  for (const m of text.matchAll(/\b(?:const|let)\s+(\w+)\s*=\s*async\b/g)) asyncNames.add(m[1]!)
  // methods declared to return a Promise
  for (const m of text.matchAll(/^\s*(?:(?:private|public|protected|static)\s+)*(\w+)\s*\([^)]*\)\s*:\s*Promise</gm)) asyncNames.add(m[1]!)
}
// Names too generic to judge by name alone (sync versions exist elsewhere).
for (const n of ['constructor', 'if', 'for', 'while', 'switch', 'catch', 'get', 'all', 'run', 'stop', 'close', 'start', 'apply', 'status', 'list', 'show', 'fetch', 'json', 'text', 'delete', 'listen', 'reload', 'resolve', 'release', 'take', 'heartbeat', 'ensure', 'load', 'view']) asyncNames.delete(n)
/** A declaration, not a call: a method or interface member signature. */
const declaration = (line: string) => /^\s*(?:(?:private|public|protected|static|readonly|async)\s+)*[\w$]+\s*(<[^>]*>)?\([^)]*\)\s*(:\s*[^=;]+)?\s*(\{\s*)?$/.test(line) && !/;\s*$/.test(line)

const findings: string[] = []
for (const [f, text] of texts) {
  text.split('\n').forEach((line, i) => {
    const m = line.match(/^\s*(?:[\w$]+(?:\(\))?\.)*([\w$]+)\(/)
    if (!m || !asyncNames.has(m[1]!) || declaration(line)) return
    if (/^\s*(await|return|void|yield)\b/.test(line)) return
    // the body of an arrow function or an argument: its value is used
    const prev = text.split('\n').slice(0, i).reverse().find((l) => l.trim() !== '') ?? ''
    if (/(=>|\(|,)\s*$/.test(prev)) return
    // a call continued on the next lines with .then/.catch is handled
    const next = text.split('\n').slice(i, i + 8).join('\n')
    if (/\)\s*\.(then|catch|finally)\(/.test(next.split(/\n\s*\n/)[0]!)) return
    findings.push(`${f}:${i + 1}: ${line.trim().slice(0, 120)}`)
  })
}
if (findings.length > 0) {
  process.stderr.write(`floating promises: ${findings.length}\n${findings.join('\n')}\n`)
  process.exit(1)
}
