import { defineCommand } from 'citty'

export default defineCommand({
  meta: { name: 'projects', description: 'Workloads: a command run as N replicas on the nodes' },
  subCommands: {
    deploy: () => import('./deploy.ts').then((m) => m.default),
    list: () => import('./list.ts').then((m) => m.default),
    show: () => import('./show.ts').then((m) => m.default),
    remove: () => import('./remove.ts').then((m) => m.default),
    logs: () => import('./logs.ts').then((m) => m.default),
  },
})
