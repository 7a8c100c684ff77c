// What every fake cloud shares: a Bun.serve on 127.0.0.1 port 0, and a book of
// machines that boot on a timer (pending → running), remember the first-boot
// data they were given, and call hooks when they boot or are deleted.
export interface FakeMachine {
  id: string
  name: string
  region: string
  size: string
  /** The first-boot data as the machine would read it (decoded from the API's encoding). */
  userData: string
  labels: Record<string, string>
  running: boolean
  createdAt: number
  address: string
  /** Anything provider-specific the fake keeps (AWS client token, Azure resources…). */
  extra: Record<string, unknown>
}

export class MachineBook {
  readonly machines = new Map<string, FakeMachine>()
  /** Every machine ever created, deleted ones included. */
  readonly created: FakeMachine[] = []
  readonly deleted: string[] = []
  bootMs = 150
  /** Called as the provider accepts a create, before it answers. */
  onCreate: ((m: FakeMachine) => void) | undefined
  onBoot: ((m: FakeMachine) => void) | undefined
  onDelete: ((m: FakeMachine) => void) | undefined
  private readonly timers = new Set<ReturnType<typeof setTimeout>>()
  private seq = 0

  nextNumber(): number {
    return 40_000_000 + ++this.seq
  }

  add(m: Omit<FakeMachine, 'running' | 'createdAt' | 'address'>): FakeMachine {
    const machine: FakeMachine = { ...m, running: false, createdAt: Date.now(), address: `203.0.113.${(this.seq % 250) + 1}` }
    this.machines.set(machine.id, machine)
    this.created.push(machine)
    this.onCreate?.(machine)
    const t = setTimeout(() => {
      this.timers.delete(t)
      if (!this.machines.has(machine.id)) return
      machine.running = true
      this.onBoot?.(machine)
    }, this.bootMs)
    this.timers.add(t)
    return machine
  }

  remove(id: string): FakeMachine | undefined {
    const m = this.machines.get(id)
    if (!m) return undefined
    this.machines.delete(id)
    this.deleted.push(id)
    this.onDelete?.(m)
    return m
  }

  stop(): void {
    for (const t of this.timers) clearTimeout(t)
    this.timers.clear()
  }
}

export interface FakeServer {
  url: string
  book: MachineBook
  /** "METHOD /path" of every request, in order. */
  calls: string[]
  stop(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

export function serveFake(handle: (req: Request, url: URL) => Response | Promise<Response>, book = new MachineBook()): FakeServer {
  const calls: string[] = []
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: async (req) => {
      const url = new URL(req.url)
      calls.push(`${req.method} ${url.pathname}`)
      try {
        return await handle(req, url)
      } catch (e) {
        return Response.json({ error: { message: `fake failed: ${(e as Error).message}` } }, { status: 500 })
      }
    },
  })
  const stop = async () => {
    book.stop()
    await server.stop(true)
  }
  return { url: `http://127.0.0.1:${server.port}`, book, calls, stop, [Symbol.asyncDispose]: stop }
}

export const json = (body: unknown, status = 200, headers?: Record<string, string>) => Response.json(body, { status, headers })

export function bearer(req: Request): string | null {
  return req.headers.get('authorization')?.match(/^Bearer (.+)$/)?.[1] ?? null
}
