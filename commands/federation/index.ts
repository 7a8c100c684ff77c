import { defineCommand } from 'citty'

export default defineCommand({
  meta: { name: 'federation', description: 'Controller and offices: office tokens, the directory, vouches, placements, break-glass reports' },
  subCommands: {
    mint: () => import('./mint.ts').then((m) => m.default),
    tokens: () => import('./tokens.ts').then((m) => m.default),
    revoke: () => import('./revoke.ts').then((m) => m.default),
    offices: () => import('./offices.ts').then((m) => m.default),
    vouch: () => import('./vouch.ts').then((m) => m.default),
    place: () => import('./place.ts').then((m) => m.default),
    'break-glass': () => import('./break-glass.ts').then((m) => m.default),
  },
})
