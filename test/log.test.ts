import { describe, expect, test } from 'bun:test'
import { wrapWords } from '../src/log.ts'

describe('terminal wrapping of log messages', () => {
  const warning =
    'Refusing remote dispatch with the plain-http --public-url http://10.0.0.1:8080: nodes would send their credentials unencrypted. Serve the API over HTTPS (bind --host to a non-loopback address, or give --tls-cert/--tls-key).'

  test('breaks only between words, never inside a flag, within the width', () => {
    for (const width of [40, 57, 80]) {
      const lines = wrapWords(warning, width, 2).split('\n')
      expect(lines.length).toBeGreaterThan(1)
      for (const l of lines) expect(l.length).toBeLessThanOrEqual(width)
      // Every word of the message survives whole, in order.
      expect(lines.map((l) => l.trim()).join(' ')).toBe(warning)
      for (const l of lines.slice(1)) expect(l.startsWith('  ') && !l.startsWith('   ')).toBe(true)
    }
  })

  test('keeps a word longer than the line whole and leaves short text alone', () => {
    expect(wrapWords('see --a-very-long-flag-name-indeed', 12)).toBe('see\n--a-very-long-flag-name-indeed')
    expect(wrapWords('short', 80)).toBe('short')
  })
})
