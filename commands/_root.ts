// The muster CLI root (loaded by commands/index.ts). Subcommands load lazily so `--help` stays fast.
import { defineCommand } from 'citty'
import { runCli } from './_main.ts'
import { VERSION } from '../src/version.ts'

const root = defineCommand({
  meta: {
    name: 'muster',
    version: VERSION,
    description: 'Let machines join a control plane safely and keep them trusted',
  },
  subCommands: {
    serve: () => import('./serve.ts').then((m) => m.default),
    login: () => import('./login.ts').then((m) => m.default),
    logout: () => import('./logout.ts').then((m) => m.default),
    tokens: () => import('./tokens/index.ts').then((m) => m.default),
    accounts: () => import('./accounts/index.ts').then((m) => m.default),
    audit: () => import('./audit.ts').then((m) => m.default),
    nodes: () => import('./nodes/index.ts').then((m) => m.default),
    projects: () => import('./projects/index.ts').then((m) => m.default),
    federation: () => import('./federation/index.ts').then((m) => m.default),
    cloud: () => import('./cloud/index.ts').then((m) => m.default),
    releases: () => import('./releases/index.ts').then((m) => m.default),
    rollouts: () => import('./rollouts/index.ts').then((m) => m.default),
    worker: () => import('./worker/index.ts').then((m) => m.default),
    agent: () => import('./agent.ts').then((m) => m.default),
    doctor: () => import('./doctor.ts').then((m) => m.default),
    demo: () => import('./demo.ts').then((m) => m.default),
    admin: () => import('./admin/index.ts').then((m) => m.default),
    version: () => import('./version.ts').then((m) => m.default),
  },
})

await runCli(root, process.argv.slice(2))
