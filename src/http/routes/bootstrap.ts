// What a new machine downloads to join (docs/operations.md), anonymous on purpose and
// served on the API and through the enrollment listener (its allow-list names
// these four): the Platform CA certificate (public; the bootstrap line checks
// its SHA-256 before trusting it), the bootstrap script, install.sh and the
// muster binary (the script checks both SHA-256s before using them).
import { Elysia } from 'elysia'
import { bootstrapBase, INSTALL_SH, INSTALL_SH_SHA256 } from '../../bootstrap/join-lines.ts'
import { servedBinary, servedBinarySha256 } from '../../bootstrap/served-binary.ts'
import { bootstrapScript, unameArch } from '../../bootstrap/script.ts'
import { MusterError } from '../../errors.ts'
import type { Services } from '../services.ts'

export const BOOTSTRAP_ROUTES = ['/bootstrap/ca.pem', '/bootstrap/bootstrap.sh', '/bootstrap/install.sh', '/bootstrap/muster'] as const

const text = (body: string, type: string) => new Response(body, { headers: { 'content-type': type, 'cache-control': 'no-store' } })

function binaryOrRefuse(): string {
  const path = servedBinary()
  if (!path) throw new MusterError('not-found', 'This Platform runs from source, so it has no muster binary to serve: build it (bun run build) and run dist/muster serve.')
  return path
}

export const bootstrapRoutes = (p: Services) =>
  new Elysia({ name: 'routes/bootstrap', prefix: '/bootstrap' })
    .get('/ca.pem', () => text(p.pki.ca.certPem, 'application/x-pem-file'))
    .get('/install.sh', () => text(INSTALL_SH, 'text/x-shellscript; charset=utf-8'))
    .get('/muster', () => new Response(Bun.file(binaryOrRefuse()), { headers: { 'content-type': 'application/octet-stream', 'cache-control': 'no-store' } }))
    .get('/bootstrap.sh', async () => {
      const base = bootstrapBase(p)
      if (!base) throw new MusterError('not-found', 'This Platform has no https endpoint from its CA to bootstrap from: start serve with --enrollment-port.')
      const binarySha256 = await servedBinarySha256(binaryOrRefuse())
      return text(
        bootstrapScript({ url: base.url, pin: base.pin, caPem: p.pki.ca.certPem, binarySha256, installSha256: INSTALL_SH_SHA256, arch: unameArch() }),
        'text/x-shellscript; charset=utf-8',
      )
    })
