import { defineCommand } from 'citty'

export default defineCommand({
  meta: { name: 'worker', description: 'Make this machine a node of a Platform, and keep its trust keys current' },
  subCommands: {
    join: () => import('./join.ts').then((m) => m.default),
    'refresh-trust': () => import('./refresh-trust.ts').then((m) => m.default),
  },
})
