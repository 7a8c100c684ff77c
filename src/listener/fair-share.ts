// Who gets the enrollment listener's connections (docs/security.md): at most `total`
// served at once, at most `perSource` of them from one source, the rest wait
// (at most `waiting`). A freed slot goes to the waiting connection whose
// source holds the fewest (in arrival order among equals), never to a source
// at its share. So one address that opens every slot it can still leaves the
// others room: it gets its share and its turns, never the whole listener.
//
// When the waiting line is full, a newcomer from a source with fewer waiting
// connections takes the place of the newest connection of the source with the
// most; a flood from one address cannot keep the others out of the line either.
import { isIPv6 } from 'node:net'

export interface ShareLimits {
  total: number
  perSource: number
  waiting: number
}

/** The key a connection is counted under: the IPv4 address, or the IPv6 /64 (one subscriber's allocation). */
export function sourceKey(address: string | undefined): string {
  if (!address) return '?'
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (mapped) return mapped[1]!
  if (!isIPv6(address)) return address
  const [head = '', tail] = address.split('::')
  const left = head ? head.split(':') : []
  const right = tail ? tail.split(':') : []
  const groups = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right]
  return `${groups
    .slice(0, 4)
    .map((g) => Number.parseInt(g || '0', 16).toString(16))
    .join(':')}::/64`
}

export class FairShare<T> {
  private served = 0
  private readonly servedBy = new Map<string, number>()
  private readonly line: { item: T; key: string }[] = []
  private readonly waitingBy = new Map<string, number>()

  constructor(
    private readonly limits: ShareLimits,
    /** Called when an item gets a slot. */
    private readonly admitItem: (item: T) => void,
    /** Called when an item is turned away (line full, or pushed out of it). */
    private readonly refuseItem: (item: T) => void,
  ) {}

  get open(): number {
    return this.served
  }
  get waiting(): number {
    return this.line.length
  }
  openFrom(key: string): number {
    return this.servedBy.get(key) ?? 0
  }

  /** A new connection: served at once, put in line, or refused. */
  offer(item: T, key: string): void {
    if (this.served < this.limits.total && this.openFrom(key) < this.limits.perSource) return this.give(item, key)
    if (this.line.length >= this.limits.waiting && !this.makeRoomFor(key)) return this.refuseItem(item)
    this.line.push({ item, key })
    bump(this.waitingBy, key, 1)
  }

  /** A served connection ended: its slot goes to the one in line whose source holds the fewest. */
  release(key: string): void {
    this.served--
    bump(this.servedBy, key, -1)
    this.fillSlots()
  }

  /** A waiting connection went away before it was served. */
  withdraw(item: T): void {
    const i = this.line.findIndex((w) => w.item === item)
    if (i < 0) return
    bump(this.waitingBy, this.line[i]!.key, -1)
    this.line.splice(i, 1)
  }

  /** Everything still waiting (for shutdown). */
  drainLine(): T[] {
    this.waitingBy.clear()
    return this.line.splice(0).map((w) => w.item)
  }

  private fillSlots(): void {
    while (this.served < this.limits.total) {
      let i = -1
      let fewest = this.limits.perSource
      for (let j = 0; j < this.line.length && fewest > 0; j++) {
        const open = this.openFrom(this.line[j]!.key)
        if (open < fewest) {
          fewest = open
          i = j
        }
      }
      if (i < 0) return
      const [w] = this.line.splice(i, 1)
      bump(this.waitingBy, w!.key, -1)
      this.give(w!.item, w!.key)
    }
  }

  private give(item: T, key: string): void {
    this.served++
    bump(this.servedBy, key, 1)
    this.admitItem(item)
  }

  /** Pushes out the newest waiting connection of the source with the most in line, if it has more than `key`. */
  private makeRoomFor(key: string): boolean {
    // More than one ahead of the newcomer's source, or two sources would take turns pushing each other out.
    let top: string | undefined
    let most = (this.waitingBy.get(key) ?? 0) + 1
    for (const [k, n] of this.waitingBy) {
      if (n > most) {
        top = k
        most = n
      }
    }
    if (top === undefined) return false
    for (let i = this.line.length - 1; i >= 0; i--) {
      if (this.line[i]!.key !== top) continue
      const [w] = this.line.splice(i, 1)
      bump(this.waitingBy, top, -1)
      this.refuseItem(w!.item)
      return true
    }
    return false
  }
}

function bump(m: Map<string, number>, key: string, by: number): void {
  const n = (m.get(key) ?? 0) + by
  if (n <= 0) m.delete(key)
  else m.set(key, n)
}
