// A replica's log on its node: the tail across the rotated file and the current
// one, whether older output was left out, and a follower across a rotation.
import { describe, expect, test } from 'bun:test'
import { appendFileSync, writeFileSync } from 'node:fs'
import { LogFollower, readTail, rotateIfOver } from '../../src/replicas/log-files.ts'
import { tmpDir } from '../helpers/tmp.ts'

const numbered = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `line ${from + i}`)

describe('log files', () => {
  test('the tail reads the rotated file before the current one; truncated says whether older output was left out', () => {
    using dir = tmpDir()
    const file = `${dir.path}/web-0.log`
    writeFileSync(`${file}.1`, `${numbered(1, 50).join('\n')}\n`)
    writeFileSync(file, `${numbered(51, 60).join('\n')}\n`)
    expect(readTail(file, 20)).toMatchObject({ lines: numbered(41, 60), truncated: true })
    expect(readTail(file, 100)).toMatchObject({ lines: numbered(1, 60), truncated: false })
    expect(readTail(file, 10)).toMatchObject({ lines: numbered(51, 60), truncated: true })
    expect(readTail(`${dir.path}/none-0.log`, 10)).toEqual({ lines: [], truncated: false, offset: 0 })
  })

  test('rotation copies past the cap and truncates in place; a follower goes on from the new start', () => {
    using dir = tmpDir()
    const file = `${dir.path}/web-0.log`
    writeFileSync(file, `${numbered(1, 10).join('\n')}\n`)
    const follower = new LogFollower(file, readTail(file, 0).offset)
    appendFileSync(file, 'line 11\nline 1')
    expect(follower.read()).toEqual(['line 11'])
    expect(rotateIfOver(file, 1000)).toBe(false)
    expect(rotateIfOver(file, 50)).toBe(true)
    expect(readTail(`${file}.1`, 3).lines).toEqual(['line 10', 'line 11', 'line 1'])
    appendFileSync(file, 'line 13\n')
    // the rest of the partial line went with the rotation; what follows is read from the new start
    expect(follower.read()).toEqual(['line 13'])
  })
})
