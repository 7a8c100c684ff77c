// GET /healthz: no authentication, just liveness and version.
import { Elysia } from 'elysia'
import { VERSION } from '../../version.ts'
import type { Health } from '../../wire/accounts.ts'

export const healthRoutes = () => new Elysia({ name: 'routes/health' }).get('/healthz', (): Health => ({ ok: true, version: VERSION }))
