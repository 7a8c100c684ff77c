// Every command of the binary is driven by some test through dist/muster, or
// is listed here with the reason it is not: coverage kept honest by a test.
import { describe, expect, test } from 'bun:test'
import { Glob } from 'bun'
import { resolve } from 'node:path'
import { runMuster } from '../helpers/binary.ts'

/** Commands no test runs through the binary, and why. */
const NOT_THROUGH_THE_BINARY: Record<string, string> = {}

async function commandsOf(path: string[]): Promise<string[][]> {
  const help = (await runMuster([...path, '--help'])).stdout
  const section = help.split(/^COMMANDS$/m)[1]
  if (!section) return [path]
  const names = [...section.matchAll(/^\s{2,}([a-z][a-z-]*)\s{2,}/gm)].map((m) => m[1]!)
  // Sub-groups in parallel: some fifty `--help` runs one after another take minutes on a loaded machine.
  return (await Promise.all(names.map((name) => commandsOf([...path, name])))).flat()
}

describe('command coverage', () => {
  test('every command is run through dist/muster by a test, or says why not', { timeout: 180_000 }, async () => {
    const commands = await commandsOf([])
    expect(commands.length).toBeGreaterThan(40)
    const root = resolve(import.meta.dir, '..')
    const files: string[] = []
    for await (const f of new Glob('**/*.test.ts').scan({ cwd: root })) if (!f.endsWith('coverage.test.ts')) files.push(await Bun.file(`${root}/${f}`).text())
    // the words as consecutive string literals in an argv array: ['nodes', 'join-token', 'create'
    const literal = (words: string[]) => new RegExp(`\\[\\s*${words.map((w) => `['"]${w}['"]`).join(',\\s*')}`)
    const runs = (words: string[]) =>
      files.some((text) => {
        if (literal(words).test(text)) return true
        // a helper that prefixes a group: runMuster(['cloud', ...args]) … cli(['connect', …
        const group = text.match(/runMuster\(\[\s*'([a-z-]+)',\s*\.\.\./)?.[1]
        return group === words[0] && words.length > 1 && literal(words.slice(1)).test(text)
      })
    const missing = commands
      .map((c) => c.join(' '))
      .filter((c) => !NOT_THROUGH_THE_BINARY[c])
      .filter((c) => !runs(c.split(' ')))
    expect(missing).toEqual([])
    // an exemption for a command that no longer exists is stale
    for (const c of Object.keys(NOT_THROUGH_THE_BINARY)) expect(commands.map((x) => x.join(' '))).toContain(c)
  })
})
