import { defineCommand } from 'citty'

export default defineCommand({
  meta: { name: 'nodes', description: 'Enroll, list and manage the machines registered with a Platform' },
  subCommands: {
    list: () => import('./list.ts').then((m) => m.default),
    'enroll-token': () => import('./enroll-token.ts').then((m) => m.default),
    'join-token': () => import('./join-token/index.ts').then((m) => m.default),
    enroll: () => import('./enroll.ts').then((m) => m.default),
    platform: () => import('./platform.ts').then((m) => m.default),
    audit: () => import('./audit.ts').then((m) => m.default),
    remove: () => import('./actions.ts').then((m) => m.remove),
    revoke: () => import('./actions.ts').then((m) => m.revoke),
    rotate: () => import('./actions.ts').then((m) => m.rotate),
    rebind: () => import('./actions.ts').then((m) => m.rebind),
    drain: () => import('./actions.ts').then((m) => m.drain),
  },
})
