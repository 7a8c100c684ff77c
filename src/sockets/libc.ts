// The few socket calls Bun does not expose, through bun:ffi (Linux): read a
// socket's local port, whether it listens and its accept-queue length, and
// attach a reuseport steering program. Loaded on first use (only during a
// swap); every function answers null/false where the platform cannot.
import { log } from '../log.ts'

const SOL_SOCKET = 1
const SO_ACCEPTCONN = 30
const SO_ATTACH_REUSEPORT_CBPF = 51
const IPPROTO_TCP = 6
const TCP_INFO = 11
/** struct tcp_info: u32 tcpi_unacked at byte 24, which for a listener is its accept-queue length. */
const TCPI_UNACKED = 24
const BPF_RET_K = 0x06

interface Libc {
  setsockopt(fd: number, level: number, name: number, value: Uint8Array, length: number): number
  getsockopt(fd: number, level: number, name: number, value: Uint8Array, length: Uint8Array): number
  getsockname(fd: number, addr: Uint8Array, length: Uint8Array): number
  ptr(b: Uint8Array): number
}

let libc: Libc | null | undefined

async function load(): Promise<Libc | null> {
  if (libc !== undefined) return libc
  libc = null
  if (process.platform !== 'linux') return null
  try {
    const { dlopen, FFIType, ptr } = await import('bun:ffi')
    const { i32, u32 } = FFIType
    const p = FFIType.ptr
    for (const name of ['libc.so.6', 'libc.musl-x86_64.so.1', 'libc.musl-aarch64.so.1']) {
      try {
        const { symbols: s } = dlopen(name, {
          setsockopt: { args: [i32, i32, i32, p, u32], returns: i32 },
          getsockopt: { args: [i32, i32, i32, p, p], returns: i32 },
          getsockname: { args: [i32, p, p], returns: i32 },
        })
        libc = {
          setsockopt: (fd, level, opt, v, n) => s.setsockopt(fd, level, opt, ptr(v), n),
          getsockopt: (fd, level, opt, v, n) => s.getsockopt(fd, level, opt, ptr(v), ptr(n)),
          getsockname: (fd, a, n) => s.getsockname(fd, ptr(a), ptr(n)),
          ptr: (b) => ptr(b),
        }
        return libc
      } catch {}
    }
  } catch (e) {
    log.debug(`bun:ffi unavailable: ${(e as Error).message}`)
  }
  return null
}

/** Loads the calls; false where this platform has none (then swaps drain best effort). */
export async function socketCallsAvailable(): Promise<boolean> {
  return (await load()) !== null
}

function intOpt(c: Libc, fd: number, level: number, opt: number, size: number): Uint8Array | null {
  const v = new Uint8Array(size)
  const n = new Uint8Array(4)
  new DataView(n.buffer).setUint32(0, size, true)
  return c.getsockopt(fd, level, opt, v, n) === 0 ? v : null
}

/** The local TCP port of socket `fd` (IPv4 or IPv6), or null. */
export function localPortOf(fd: number): number | null {
  if (!libc) return null
  const addr = new Uint8Array(128)
  const n = new Uint8Array(4)
  new DataView(n.buffer).setUint32(0, addr.byteLength, true)
  if (libc.getsockname(fd, addr, n) !== 0) return null
  const family = addr[0]! | (addr[1]! << 8)
  if (family !== 2 && family !== 10) return null // AF_INET, AF_INET6
  return (addr[2]! << 8) | addr[3]!
}

export function isListening(fd: number): boolean {
  const v = libc && intOpt(libc, fd, SOL_SOCKET, SO_ACCEPTCONN, 4)
  return v ? new DataView(v.buffer).getInt32(0, true) !== 0 : false
}

/** Finished handshakes waiting in listener `fd`'s accept queue, or null. */
export function acceptQueueOf(fd: number): number | null {
  const v = libc && intOpt(libc, fd, IPPROTO_TCP, TCP_INFO, 232)
  return v ? new DataView(v.buffer).getUint32(TCPI_UNACKED, true) : null
}

/** Attaches `ret #index` to the SO_REUSEPORT group of listener `fd`: every new connection goes to that member. */
export function steerGroup(fd: number, index: number): boolean {
  if (!libc) return false
  const filter = new Uint8Array(8) // struct sock_filter { u16 code; u8 jt; u8 jf; u32 k }
  const f = new DataView(filter.buffer)
  f.setUint16(0, BPF_RET_K, true)
  f.setUint32(4, index, true)
  const prog = new Uint8Array(16) // struct sock_fprog { u16 len; struct sock_filter *filter }
  const p = new DataView(prog.buffer)
  p.setUint16(0, 1, true)
  p.setBigUint64(8, BigInt(libc.ptr(filter)), true)
  return libc.setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, prog, prog.byteLength) === 0
}
