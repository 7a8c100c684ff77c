// The dashboard: a static page and its scripts, embedded in the binary and
// served by the Platform itself. It holds no data and no API of its own: the
// scripts call the same JSON routes as the SDK, with the session cookie.
import { Elysia } from 'elysia'
import { MusterError } from '../errors.ts'
import html from './ui/index.html' with { type: 'text' }
import css from './ui/app.css' with { type: 'text' }
import app from './ui/app.js' with { type: 'text' }
import lib from './ui/lib.js' with { type: 'text' }
import nodes from './ui/nodes.js' with { type: 'text' }
import addMachine from './ui/add-machine.js' with { type: 'text' }
import projects from './ui/projects.js' with { type: 'text' }
import overview from './ui/overview.js' with { type: 'text' }
import projectPage from './ui/project-page.js' with { type: 'text' }
import projectForm from './ui/project-form.js' with { type: 'text' }
import offices from './ui/offices.js' with { type: 'text' }
import cloud from './ui/cloud.js' with { type: 'text' }
import cloudConnect from './ui/cloud-connect.js' with { type: 'text' }
import cloudWizard from './ui/cloud-wizard.js' with { type: 'text' }
import cloudScaling from './ui/cloud-scaling.js' with { type: 'text' }
import accounts from './ui/accounts.js' with { type: 'text' }
import audit from './ui/audit.js' with { type: 'text' }
import releases from './ui/releases.js' with { type: 'text' }

const JS = 'text/javascript; charset=utf-8'
const FAVICON = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#2f5bd3"/><path d="M3 12V4l5 5 5-5v8" fill="none" stroke="#fff" stroke-width="2"/></svg>'
const ASSETS: Record<string, { body: string; type: string }> = {
  'app.css': { body: css, type: 'text/css; charset=utf-8' },
  'app.js': { body: app, type: JS },
  'lib.js': { body: lib, type: JS },
  'nodes.js': { body: nodes, type: JS },
  'add-machine.js': { body: addMachine, type: JS },
  'projects.js': { body: projects, type: JS },
  'overview.js': { body: overview, type: JS },
  'project-page.js': { body: projectPage, type: JS },
  'project-form.js': { body: projectForm, type: JS },
  'offices.js': { body: offices, type: JS },
  'cloud.js': { body: cloud, type: JS },
  'cloud-connect.js': { body: cloudConnect, type: JS },
  'cloud-wizard.js': { body: cloudWizard, type: JS },
  'cloud-scaling.js': { body: cloudScaling, type: JS },
  'accounts.js': { body: accounts, type: JS },
  'audit.js': { body: audit, type: JS },
  'releases.js': { body: releases, type: JS },
  'favicon.svg': { body: FAVICON, type: 'image/svg+xml' },
}

/** No inline script or style, no framing, nothing fetched from anywhere but this origin. */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ')

const SECURITY_HEADERS = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
}

function page(body: string, type: string, cache: string): Response {
  return new Response(body, { headers: { 'content-type': type, 'cache-control': cache, ...SECURITY_HEADERS } })
}

export const dashboardRoutes = () =>
  new Elysia({ name: 'routes/dashboard' })
    // The same page whether logged in or not: the script asks /api/v1/whoami.
    .get('/', () => page(html, 'text/html; charset=utf-8', 'no-store'))
    .get('/login', () => new Response(null, { status: 303, headers: { location: '/' } }))
    .get('/ui/:file', ({ params }) => {
      const asset = Object.hasOwn(ASSETS, params.file) ? ASSETS[params.file] : undefined
      if (!asset) throw new MusterError('not-found', 'No such file.')
      return page(asset.body, asset.type, 'no-cache')
    })
