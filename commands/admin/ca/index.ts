import { defineCommand } from 'citty'

export default defineCommand({
  meta: { name: 'ca', description: 'Replace the Platform CA on purpose, without a re-join: prepare, wait two days, promote' },
  subCommands: {
    prepare: () => import('./prepare.ts').then((m) => m.default),
    promote: () => import('./promote.ts').then((m) => m.default),
  },
})
