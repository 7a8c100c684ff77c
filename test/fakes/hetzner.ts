// A local Hetzner Cloud API v1: bearer tokens (read-only tokens refused on
// writes), locations, server types, servers with label selectors, pagination,
// name uniqueness, the 32 KiB user-data limit, initializing → running.
import { bearer, json, serveFake, type FakeMachine, type FakeServer } from './common.ts'

const LOCATIONS = [
  { id: 1, name: 'fsn1', description: 'Falkenstein DC Park 1', country: 'DE', city: 'Falkenstein', latitude: 50.47612, longitude: 12.370071, network_zone: 'eu-central' },
  { id: 2, name: 'nbg1', description: 'Nuremberg DC Park 1', country: 'DE', city: 'Nuremberg', latitude: 49.452102, longitude: 11.076665, network_zone: 'eu-central' },
  { id: 3, name: 'hel1', description: 'Helsinki DC Park 1', country: 'FI', city: 'Helsinki', latitude: 60.169855, longitude: 24.938379, network_zone: 'eu-central' },
]
const price = (location: string, monthly: string) => ({ location, price_hourly: { net: '0.0060', gross: '0.0071' }, price_monthly: { net: monthly, gross: (Number(monthly) * 1.19).toFixed(4) } })
const SERVER_TYPES = [
  { id: 104, name: 'cx22', description: 'CX22', cores: 2, memory: 4.0, disk: 40, deprecated: false, storage_type: 'local', cpu_type: 'shared', architecture: 'x86', prices: LOCATIONS.map((l) => price(l.name, '3.7900')) },
  { id: 105, name: 'cx32', description: 'CX32', cores: 4, memory: 8.0, disk: 80, deprecated: false, storage_type: 'local', cpu_type: 'shared', architecture: 'x86', prices: LOCATIONS.map((l) => price(l.name, '6.8000')) },
  { id: 1, name: 'cx11', description: 'CX11', cores: 1, memory: 2.0, disk: 20, deprecated: true, storage_type: 'local', cpu_type: 'shared', architecture: 'x86', prices: [price('fsn1', '3.2900')] },
  { id: 45, name: 'cax11', description: 'CAX11', cores: 2, memory: 4.0, disk: 40, deprecated: false, storage_type: 'local', cpu_type: 'shared', architecture: 'arm', prices: [price('fsn1', '3.7900')] },
]
const IMAGES = new Set(['ubuntu-24.04', 'ubuntu-22.04', 'debian-12'])

const error = (status: number, code: string, message: string, details: unknown = {}) => json({ error: { code, message, details } }, status)

function page<T>(url: URL, key: string, items: T[]) {
  const perPage = Math.min(Number(url.searchParams.get('per_page') ?? 25), 50)
  const p = Math.max(Number(url.searchParams.get('page') ?? 1), 1)
  const last = Math.max(Math.ceil(items.length / perPage), 1)
  return json({
    [key]: items.slice((p - 1) * perPage, p * perPage),
    meta: { pagination: { page: p, per_page: perPage, previous_page: p > 1 ? p - 1 : null, next_page: p < last ? p + 1 : null, last_page: last, total_entries: items.length } },
  })
}

function server(m: FakeMachine) {
  return {
    id: Number(m.id),
    name: m.name,
    status: m.running ? 'running' : 'initializing',
    created: new Date(m.createdAt).toISOString(),
    public_net: { ipv4: { ip: m.address, blocked: false, dns_ptr: `static.${m.address}.clients.your-server.de` }, ipv6: null, floating_ips: [] },
    server_type: SERVER_TYPES.find((t) => t.name === m.size),
    datacenter: { name: `${m.region}-dc14`, location: LOCATIONS.find((l) => l.name === m.region) },
    image: { name: 'ubuntu-24.04' },
    labels: m.labels,
  }
}

function matches(selector: string | null, labels: Record<string, string>): boolean {
  if (!selector) return true
  return selector.split(',').every((term) => {
    const [k, v] = term.split('=')
    return v === undefined ? k! in labels : labels[k!] === v
  })
}

export interface HetznerFake extends FakeServer {
  token: string
  readOnlyToken: string
}

export function startHetznerFake(opts: { token?: string } = {}): HetznerFake {
  const token = opts.token ?? 'hz-test-token-0123456789abcdefghijklmnopqrstuvwxyz0123456789abcd'
  const readOnlyToken = `${token}-ro`
  const fake = serveFake(async (req, url) => {
    const t = bearer(req)
    if (t !== token && t !== readOnlyToken) return error(401, 'unauthorized', 'unable to authenticate')
    if (req.method !== 'GET' && t === readOnlyToken) return error(403, 'token_readonly', 'The token you are using is read-only')
    const path = url.pathname.replace(/^\/v1/, '')
    const book = fake.book
    if (req.method === 'GET' && path === '/locations') return page(url, 'locations', LOCATIONS)
    if (req.method === 'GET' && path === '/server_types') return page(url, 'server_types', SERVER_TYPES)
    if (req.method === 'GET' && path === '/servers') {
      const list = [...book.machines.values()].filter((m) => matches(url.searchParams.get('label_selector'), m.labels))
      return page(url, 'servers', list.map(server))
    }
    if (req.method === 'POST' && path === '/servers') {
      const b = (await req.json()) as { name?: string; server_type?: string; location?: string; image?: string; user_data?: string; labels?: Record<string, string> }
      const invalid = (field: string, msg: string) => error(400, 'invalid_input', `invalid input in field '${field}'`, { fields: [{ name: field, messages: [msg] }] })
      if (!b.name || !/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(b.name)) return invalid('name', 'must be a valid hostname')
      if (!SERVER_TYPES.some((s) => s.name === b.server_type)) return invalid('server_type', 'server type not found')
      if (!LOCATIONS.some((l) => l.name === b.location)) return invalid('location', 'location not found')
      if (!b.image || !IMAGES.has(b.image)) return invalid('image', 'image not found')
      if ((b.user_data?.length ?? 0) > 32 * 1024) return invalid('user_data', 'user_data must not exceed 32 KiB')
      if ([...book.machines.values()].some((m) => m.name === b.name)) return error(409, 'uniqueness_error', 'server name is already used')
      const m = book.add({ id: String(book.nextNumber()), name: b.name, region: b.location!, size: b.server_type!, userData: b.user_data ?? '', labels: b.labels ?? {}, extra: {} })
      const action = { id: book.nextNumber(), command: 'create_server', status: 'running', progress: 0, started: new Date().toISOString(), finished: null, resources: [{ id: Number(m.id), type: 'server' }], error: null }
      return json({ server: server(m), action, next_actions: [{ ...action, id: book.nextNumber(), command: 'start_server' }], root_password: null }, 201)
    }
    const one = path.match(/^\/servers\/(\d+)$/)
    if (one) {
      const m = book.machines.get(one[1]!)
      if (!m) return error(404, 'not_found', `server with ID '${one[1]}' not found`)
      if (req.method === 'GET') return json({ server: server(m) })
      if (req.method === 'DELETE') {
        book.remove(m.id)
        return json({ action: { id: book.nextNumber(), command: 'delete_server', status: 'running', progress: 0, resources: [{ id: Number(m.id), type: 'server' }], error: null } })
      }
    }
    return error(404, 'not_found', 'not found')
  })
  return Object.assign(fake, { token, readOnlyToken, url: `${fake.url}/v1` })
}
