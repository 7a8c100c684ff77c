// src/tunables.ts is the one list of MUSTER_* variables: docs/tunables.md
// names each with its default and meaning, and a number reads as documented.
import { describe, expect, test } from 'bun:test'
import { TUNABLES, tunableNumber } from '../src/tunables.ts'

const doc = await Bun.file(`${import.meta.dir}/../docs/tunables.md`).text()
const shown = (t: (typeof TUNABLES)[keyof typeof TUNABLES]): string => {
  const d = t.default as number | string | null
  const unit = 'unit' in t ? t.unit : undefined
  if (d === null) return '—'
  return unit === 'ms' ? `${d} (ms)` : unit === 'seconds' ? `${d} (s)` : unit === 'bytes' ? `${d} (bytes)` : `\`${d}\``
}

describe('tunables', () => {
  test('docs/tunables.md lists every variable with its default and meaning, and no other', () => {
    for (const [name, t] of Object.entries(TUNABLES)) expect(doc).toContain(`| \`${name}\` | ${shown(t)} | ${t.meaning.replace(/\|/g, '\\|')} |`)
    const listed = [...doc.matchAll(/^\| `(MUSTER_[A-Z0-9_]+)` \|/gm)].map((m) => m[1]!)
    expect(listed.filter((n) => !(n in TUNABLES)).sort()).toEqual(['MUSTER_PROJECT', 'MUSTER_REPLICA'])
  })

  test('a number: positive counts, zero only where it is a value, anything else is the default', () => {
    expect(tunableNumber('MUSTER_AGENT_HEARTBEAT_MS', { MUSTER_AGENT_HEARTBEAT_MS: '250' })).toBe(250)
    for (const raw of [undefined, '', '0', '-5', 'soon', 'Infinity']) expect(tunableNumber('MUSTER_AGENT_HEARTBEAT_MS', { MUSTER_AGENT_HEARTBEAT_MS: raw })).toBe(10_000)
    expect(tunableNumber('MUSTER_SWAP_LINGER_SECONDS', { MUSTER_SWAP_LINGER_SECONDS: '0' })).toBe(0)
    expect(tunableNumber('MUSTER_SWAP_LINGER_SECONDS', { MUSTER_SWAP_LINGER_SECONDS: '-1' })).toBe(30)
    expect(tunableNumber('MUSTER_LOG_LEVEL', {})).toBe(3)
  })
})
