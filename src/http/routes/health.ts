// GET /healthz: no authentication, just liveness and version.
import { Elysia } from 'elysia'
import { VERSION } from '../../version.ts'

export const healthRoutes = () => new Elysia({ name: 'routes/health' }).get('/healthz', () => ({ ok: true, version: VERSION }))
