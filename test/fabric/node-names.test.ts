// The registry's names are bytes with an index of slots (src/fabric/node-names.ts),
// not a million strings: held here to a Map over the same adds, rebinds and
// removals, in an index small enough that names collide and wrap around its
// end, so every removal shifts the entries after it; and a name no Latin-1
// byte can hold is kept as a string and found the same way.
import { expect, test } from 'bun:test'
import { NameOrder, NodeNames } from '../../src/fabric/node-names.ts'

/** A NodeNames and the Map it must agree with, slots handed out in order as NodeTable does. */
function model() {
  const names = new NodeNames()
  const map = new Map<string, number>()
  let used = 0
  let capacity = 0
  return {
    names,
    map,
    add(name: string): number {
      if (used === capacity) names.grow((capacity = Math.max(1024, capacity * 2)), used)
      const s = used++
      names.set(s, name)
      map.set(name, s)
      return s
    },
    remove(name: string): boolean {
      const had = map.delete(name)
      expect(names.remove(name)).toBe(had)
      return had
    },
    check(probes: Iterable<string>): void {
      expect(names.size).toBe(map.size)
      for (const name of probes) expect(names.slotOf(name)).toBe(map.get(name) ?? -1)
      const live = [...names.liveSlots(used)]
      expect(live.length).toBe(map.size)
      for (const s of live) expect(map.get(names.nameOf(s))).toBe(s)
    },
  }
}

test('adds, rebinds and removals agree with a Map, through collisions, wrap-arounds and growth', () => {
  const m = model()
  let seed = 7
  const random = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32
  const pool = Array.from({ length: 3000 }, (_, i) => `node-${(i * 7919) % 5003}-${i % 13}`)
  for (let round = 0; round < 6; round++) {
    for (let i = 0; i < 1500; i++) {
      const name = pool[Math.floor(random() * pool.length)]!
      const roll = random()
      if (roll < 0.55) m.add(name) // a new name, or a rebind: the old slot is no longer live
      else m.remove(name)
    }
    m.check(pool)
  }
  // A name removed and added again takes a new slot; its old one keeps its name for the views taken of it.
  const s = m.add('node-back')
  m.remove('node-back')
  const again = m.add('node-back')
  expect(again).not.toBe(s)
  expect(m.names.nameOf(s)).toBe('node-back')
  expect(m.names.isLive(s)).toBe(false)
  expect(m.names.isLive(again)).toBe(true)
  m.check(['node-back', ...pool])
})

test('a name outside Latin-1 (or longer than 255) is kept as a string and found like the others', () => {
  const m = model()
  const odd = ['nœud-1', 'ノード', 'x'.repeat(300), 'plain-1', 'é-latin1']
  for (const name of odd) m.add(name)
  m.check([...odd, 'nœud-2', 'x'.repeat(299)])
  for (const name of odd) expect(m.names.nameOf(m.names.slotOf(name))).toBe(name)
  m.remove('ノード')
  m.check(odd)
  // A value from outside that is not a string (a JSON null, say) finds nothing and removes nothing.
  expect(m.names.slotOf(null as unknown as string)).toBe(-1)
  expect(m.names.remove(undefined as unknown as string)).toBe(false)
})

test('names compare in code-unit order without being made strings, and a NameOrder reads them back', () => {
  const m = model()
  const names = ['b', 'a-1', 'a', 'ab', 'é', 'ノ', 'a0', 'z']
  const slots = names.map((n) => m.add(n))
  slots.sort((a, b) => m.names.compare(a, b))
  const order = new NameOrder(m.names, slots)
  expect(Array.from({ length: order.length }, (_, i) => order.at(i))).toEqual([...names].sort())
  expect(order.at(names.length)).toBeUndefined()
})
