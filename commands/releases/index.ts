import { defineCommand } from 'citty'

export default defineCommand({
  meta: { name: 'releases', description: 'Signed releases of muster the fleet can roll out: make a release key, add a release, list them' },
  subCommands: {
    keygen: () => import('./keygen.ts').then((m) => m.default),
    add: () => import('./add.ts').then((m) => m.default),
    list: () => import('./list.ts').then((m) => m.default),
    'endorse-key': () => import('./endorse-key.ts').then((m) => m.default),
  },
})
