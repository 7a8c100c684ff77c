import { describe, expect, test } from 'bun:test'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { DataDir } from '../../src/datadir.ts'
import { acquireServeLock, serveLockHolder } from '../../src/serve-lock.ts'
import { tmpDir } from '../helpers/tmp.ts'

describe('serve.lock', () => {
  test('held by a live process it refuses naming the pid; released it is gone', () => {
    using dir = tmpDir()
    const d = new DataDir(dir.path)
    const release = acquireServeLock(d)
    expect(serveLockHolder(d)).toBe(process.pid)
    const other = Bun.spawn(['sleep', '30'])
    try {
      writeFileSync(d.path('platform/serve.lock'), readFileSync(d.path('platform/serve.lock'), 'utf8').replace(String(process.pid), String(other.pid)).replace(/ \d+$/m, ''))
      expect(() => acquireServeLock(d)).toThrow(`pid ${other.pid}`)
    } finally {
      other.kill()
    }
    writeFileSync(d.path('platform/serve.lock'), `${process.pid}\n`)
    release()
    expect(serveLockHolder(d)).toBe(process.pid) // release only removes its own lock line
  })

  test('a dead holder, or a live pid that started at another time, is a stale lock and is taken over', async () => {
    using dir = tmpDir()
    const d = new DataDir(dir.path)
    d.ensureDir('platform')
    const gone = Bun.spawn(['true'])
    await gone.exited
    writeFileSync(d.path('platform/serve.lock'), `${gone.pid}\n`)
    expect(serveLockHolder(d)).toBeNull()
    const sleeper = Bun.spawn(['sleep', '30'])
    try {
      writeFileSync(d.path('platform/serve.lock'), `${sleeper.pid} 1\n`) // same pid, another start time
      expect(serveLockHolder(d)).toBeNull()
      const release = acquireServeLock(d)
      expect(readFileSync(d.path('platform/serve.lock'), 'utf8')).toStartWith(`${process.pid}`)
      release()
    } finally {
      sleeper.kill()
    }
  })
})

test('a serve that stops removes its own lock file (a clean stop leaves nothing to take over)', () => {
  using dir = tmpDir()
  const d = new DataDir(dir.path)
  const release = acquireServeLock(d)
  expect(existsSync(d.path('platform/serve.lock'))).toBe(true)
  release()
  expect(existsSync(d.path('platform/serve.lock'))).toBe(false)
  expect(serveLockHolder(d)).toBeNull()
})
