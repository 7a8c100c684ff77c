// Names are bytes too (Latin-1, one buffer, an open-addressing index of
// slots by the name's hash), not a million strings: a string is a cell the
// collector marks on every full collection, and a million of them were nearly
// every cell of a million-node Platform's heap (a full collection ~85 ms).
// A name is made a string only when read (NodeEntry keeps the one it was
// looked up by). A name no Latin-1 byte string can hold is kept as a string.

import { widened } from './columns.ts'

/** Every slot's name (a slot's name never changes), and which slot each live name is at. */
export class NodeNames {
  /** Live names (a slot whose name still points at it). */
  private live = 0
  /** 1: the slot is its name's current one. */
  private alive = new Uint8Array(0)
  /** Each slot's name: bytes from `starts` in `bytes`, `lengths` long (0: a string in wideNames), and its hash. */
  private bytes = new Uint8Array(0)
  private bytesUsed = 0
  private starts = new Int32Array(0)
  private lengths = new Uint8Array(0)
  private hashes = new Int32Array(0)
  private readonly wideNames = new Map<number, string>()
  /** Open addressing, linear probing: slot + 1 of a live name at (hash & mask) or after it; 0 is empty. */
  private index = new Int32Array(0)
  private mask = -1

  get size(): number {
    return this.live
  }

  /** The live slot holding `name`, or -1 (also for what is not a string: a look-up by a value from outside). */
  slotOf(name: string): number {
    if (this.mask < 0 || typeof name !== 'string') return -1
    const index = this.index
    for (let i = hashOf(name) & this.mask; ; i = (i + 1) & this.mask) {
      const v = index[i]!
      if (v === 0) return -1
      if (this.nameIs(v - 1, name)) return v - 1
    }
  }

  /** Whether slot `s` is named `name` (compared without making the slot's name a string). */
  nameIs(s: number, name: string): boolean {
    const length = this.lengths[s]!
    if (length === 0) return this.wideNames.get(s) === name
    if (length !== name.length) return false
    const bytes = this.bytes
    const at = this.starts[s]!
    for (let i = 0; i < length; i++) if (bytes[at + i] !== name.charCodeAt(i)) return false
    return true
  }

  /** Slot `s`'s name (a new string each call: callers keep it). */
  nameOf(s: number): string {
    const length = this.lengths[s]!
    if (length === 0) return this.wideNames.get(s)!
    const at = this.starts[s]!
    return String.fromCharCode.apply(null, this.bytes.subarray(at, at + length) as unknown as number[])
  }

  /** Code-unit order of two slots' names (-1, 0, 1), without making them strings. */
  compare(a: number, b: number): number {
    const la = this.lengths[a]!
    const lb = this.lengths[b]!
    if (la === 0 || lb === 0) {
      const x = this.nameOf(a)
      const y = this.nameOf(b)
      return x < y ? -1 : x > y ? 1 : 0
    }
    const bytes = this.bytes
    const pa = this.starts[a]!
    const pb = this.starts[b]!
    const n = Math.min(la, lb)
    for (let i = 0; i < n; i++) {
      const d = bytes[pa + i]! - bytes[pb + i]!
      if (d !== 0) return d < 0 ? -1 : 1
    }
    return la === lb ? 0 : la < lb ? -1 : 1
  }

  /** Whether slot `s` is its name's current slot (a rebound or removed name's old slot is not). */
  isLive(s: number): boolean {
    return this.alive[s] === 1
  }

  /** The live slots below `used`, in slot order. */
  *liveSlots(used: number): IterableIterator<number> {
    const alive = this.alive
    for (let s = 0; s < used; s++) if (alive[s] === 1) yield s
  }

  /** Stores slot `s`'s name and points the index at it (the name's old slot, if any, is no longer live). */
  set(s: number, name: string): void {
    let narrow = name.length > 0 && name.length < 256
    for (let i = 0; narrow && i < name.length; i++) narrow = name.charCodeAt(i) < 256
    if (narrow) {
      if (this.bytesUsed + name.length > this.bytes.length) {
        const bigger = new Uint8Array(Math.max(4096, this.bytes.length * 2, this.bytesUsed + name.length))
        bigger.set(this.bytes.subarray(0, this.bytesUsed))
        this.bytes = bigger
      }
      const at = this.bytesUsed
      for (let i = 0; i < name.length; i++) this.bytes[at + i] = name.charCodeAt(i)
      this.starts[s] = at
      this.lengths[s] = name.length
      this.bytesUsed += name.length
    } else {
      this.lengths[s] = 0
      this.wideNames.set(s, name)
    }
    this.hashes[s] = hashOf(name)
    for (let i = this.hashes[s]! & this.mask; ; i = (i + 1) & this.mask) {
      const v = this.index[i]!
      if (v === 0) {
        this.index[i] = s + 1
        this.live++
        break
      }
      if (this.nameIs(v - 1, name)) {
        this.alive[v - 1] = 0
        this.index[i] = s + 1
        break
      }
    }
    this.alive[s] = 1
  }

  /** Room for `capacity` slots, `used` of them taken: the columns grow and the index is made again (at most half full). */
  grow(capacity: number, used: number): void {
    this.alive = widened(this.alive, capacity)
    this.lengths = widened(this.lengths, capacity)
    this.starts = widened(this.starts, capacity)
    this.hashes = widened(this.hashes, capacity)
    let size = 1024
    while (size < capacity * 2) size *= 2
    if (size - 1 === this.mask) return
    this.index = new Int32Array(size)
    this.mask = size - 1
    for (let s = 0; s < used; s++) {
      if (this.alive[s] !== 1) continue
      let i = this.hashes[s]! & this.mask
      while (this.index[i] !== 0) i = (i + 1) & this.mask
      this.index[i] = s + 1
    }
  }

  /** The name leaves the index (its slot keeps its name); false when it was not there. */
  remove(name: string): boolean {
    if (this.mask < 0 || typeof name !== 'string') return false
    const index = this.index
    const mask = this.mask
    let i = hashOf(name) & mask
    for (; ; i = (i + 1) & mask) {
      const v = index[i]!
      if (v === 0) return false
      if (this.nameIs(v - 1, name)) {
        this.alive[v - 1] = 0
        break
      }
    }
    // Backward-shift deletion: each entry after the hole whose home is not between them moves into it.
    index[i] = 0
    for (let j = (i + 1) & mask; index[j] !== 0; j = (j + 1) & mask) {
      const home = this.hashes[index[j]! - 1]! & mask
      const between = i <= j ? home > i && home <= j : home > i || home <= j
      if (between) continue
      index[i] = index[j]!
      index[j] = 0
      i = j
    }
    this.live--
    return true
  }
}

/** FNV-1a over a name's code units (a Latin-1 name's bytes hash the same). */
function hashOf(name: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193)
  return h >>> 0
}

/**
 * Node names in code-unit order, as slots (a name is made a string only when read). A slot here may be
 * its name's old one (the name was rebound since): it holds the same name, which is what is read.
 */
export class NameOrder {
  constructor(
    private readonly names: NodeNames,
    readonly slots: number[],
  ) {}
  get length(): number {
    return this.slots.length
  }
  at(i: number): string | undefined {
    const s = this.slots[i]
    return s === undefined ? undefined : this.names.nameOf(s)
  }
}
