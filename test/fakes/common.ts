// What every fake cloud shares: a Bun.serve on 127.0.0.1 port 0, and a book of
// machines that boot on a timer (pending → running), remember the first-boot
// data they were given, and call hooks when they boot or are deleted. And the
// ways real APIs misbehave, switched on per test:
// - throttling: the next N matching requests get the provider's own throttle
//   answer (status, error code, reset header), whatever they asked;
// - delayed visibility: a created machine is missing from reads for a while
//   (EC2 and Compute Engine are eventually consistent);
// - a lost create answer: the create is carried out, then the connection is
//   reset before the answer arrives.
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
  /** Reads do not show a machine this long after its create. */
  hiddenMs = 0
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

  /** Whether reads show the machine yet. */
  visible(m: FakeMachine): boolean {
    return Date.now() - m.createdAt >= this.hiddenMs
  }

  /** The machines reads show. */
  shown(): FakeMachine[] {
    return [...this.machines.values()].filter((m) => this.visible(m))
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

export interface Call {
  at: number
  method: string
  path: string
}

export interface Faults {
  /** The next `times` requests `match` accepts get the provider's throttle answer, asking to wait `waitS` seconds. */
  throttle(times: number, match?: (req: Request, url: URL, body: string) => boolean, waitS?: number): void
  /** The next `times` creates are carried out, and their answers lost (connection reset). */
  loseCreates(times?: number): void
  /** Creates wait (a slow provider) until the returned function is called. */
  holdCreates(): () => void
}

export interface FakeServer extends Faults {
  url: string
  book: MachineBook
  /** "METHOD /path" of every request, in order. */
  calls: string[]
  /** The same with the time each arrived. */
  log: Call[]
  /** Requests answered with a throttle. */
  throttled: Call[]
  /** The body of every create request that reached the provider (lost, de-duplicated or not). */
  createBodies: string[]
  stop(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

export interface FakeSpec {
  handle(req: Request, url: URL): Response | Promise<Response>
  /** The provider's answer to a throttled request. */
  throttle(req: Request, url: URL, waitS: number): Response
  /** Whether a request creates a machine (for lost answers). */
  isCreate(req: Request, url: URL, body: string): boolean
}

/** A response whose body breaks off: the client sees the connection reset (an undefined reason: Bun logs nothing). */
const lost = () => new Response(new ReadableStream({ start: (c) => c.error(undefined) }), { headers: { 'content-type': 'application/json' } })

export function serveFake(spec: FakeSpec | FakeSpec['handle'], book = new MachineBook()): FakeServer {
  const s: FakeSpec = typeof spec === 'function' ? { handle: spec, throttle: () => new Response('{}', { status: 429 }), isCreate: () => false } : spec
  const calls: string[] = []
  const log: Call[] = []
  const throttled: Call[] = []
  const createBodies: string[] = []
  const throttles: { times: number; match: (req: Request, url: URL, body: string) => boolean; waitS: number }[] = []
  let lose = 0
  let held: Promise<void> | undefined
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    error: () => new Response(null, { status: 500 }),
    fetch: async (req) => {
      const url = new URL(req.url)
      const call = { at: Date.now(), method: req.method, path: url.pathname }
      calls.push(`${req.method} ${url.pathname}`)
      log.push(call)
      try {
        const body = req.method === 'GET' || req.method === 'HEAD' ? '' : await req.clone().text()
        const t = throttles.find((x) => x.times > 0 && x.match(req, url, body))
        if (t) {
          t.times--
          throttled.push(call)
          return s.throttle(req, url, t.waitS)
        }
        const isCreate = s.isCreate(req, url, body)
        if (isCreate) createBodies.push(body)
        if (isCreate && held) await held
        const creating = lose > 0 && isCreate
        const res = await s.handle(req, url)
        if (creating && res.status < 300) {
          lose--
          return lost()
        }
        return res
      } catch (e) {
        return Response.json({ error: { message: `fake failed: ${(e as Error).message}` } }, { status: 500 })
      }
    },
  })
  const stop = async () => {
    book.stop()
    await server.stop(true)
  }
  return {
    url: `http://127.0.0.1:${server.port}`,
    book,
    calls,
    log,
    throttled,
    createBodies,
    stop,
    [Symbol.asyncDispose]: stop,
    throttle: (times, match = () => true, waitS = 1) => void throttles.push({ times, match, waitS }),
    loseCreates: (times = 1) => void (lose += times),
    holdCreates: () => {
      let release!: () => void
      held = new Promise((r) => (release = r))
      return () => {
        held = undefined
        release()
      }
    },
  }
}

export const json = (body: unknown, status = 200, headers?: Record<string, string>) => Response.json(body, { status, headers })

export function bearer(req: Request): string | null {
  return req.headers.get('authorization')?.match(/^Bearer (.+)$/)?.[1] ?? null
}

/** A UNIX time `seconds` from now, as Hetzner's and DigitalOcean's RateLimit-Reset give it. */
export const resetIn = (seconds: number) => String(Math.ceil(Date.now() / 1000) + seconds)
