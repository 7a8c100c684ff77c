import { defineCommand } from 'citty'

export default defineCommand({
  meta: { name: 'rollouts', description: 'Roll a release over the fleet: canaries first, a bounded number at a time, halted by a failure' },
  subCommands: {
    start: () => import('./start.ts').then((m) => m.default),
    status: () => import('./status.ts').then((m) => m.default),
    list: () => import('./list.ts').then((m) => m.default),
    pause: () => import('./steer.ts').then((m) => m.pause),
    resume: () => import('./steer.ts').then((m) => m.resume),
    cancel: () => import('./steer.ts').then((m) => m.cancel),
  },
})
