import { defineCommand } from 'citty'

export default defineCommand({
  meta: { name: 'join-token', description: 'Fleet join tokens: many machines, a name pattern, a lifetime' },
  subCommands: {
    create: () => import('./create.ts').then((m) => m.default),
    list: () => import('./list.ts').then((m) => m.default),
    revoke: () => import('./revoke.ts').then((m) => m.default),
  },
})
