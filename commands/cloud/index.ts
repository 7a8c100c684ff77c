import { defineCommand } from 'citty'

export default defineCommand({
  meta: { name: 'cloud', description: 'Cloud providers: connect one, create machines that join this Platform, scale out' },
  subCommands: {
    connect: () => import('./connect.ts').then((m) => m.default),
    disconnect: () => import('./disconnect.ts').then((m) => m.default),
    status: () => import('./status.ts').then((m) => m.default),
    regions: () => import('./regions.ts').then((m) => m.default),
    sizes: () => import('./sizes.ts').then((m) => m.default),
    provision: () => import('./provision.ts').then((m) => m.default),
    provisions: () => import('./provisions.ts').then((m) => m.default),
    release: () => import('./release.ts').then((m) => m.default),
    scaling: () => import('./scaling.ts').then((m) => m.default),
    audit: () => import('./audit.ts').then((m) => m.default),
  },
})
