import { defineCommand } from 'citty'

export default defineCommand({
  meta: { name: 'admin', description: 'Host-local administration through the data directory (no Platform connection needed)' },
  subCommands: {
    'api-token': () => import('./api-token.ts').then((m) => m.default),
    passwd: () => import('./passwd.ts').then((m) => m.default),
    'break-glass': () => import('./break-glass.ts').then((m) => m.default),
    detach: () => import('./detach.ts').then((m) => m.default),
    'migrate-store': () => import('./migrate-store.ts').then((m) => m.default),
    ca: () => import('./ca/index.ts').then((m) => m.default),
  },
})
