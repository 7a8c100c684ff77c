import { defineCommand } from 'citty'

export default defineCommand({
  meta: { name: 'tokens', description: 'Operator API tokens: list yours (everyone’s for server.accounts.manage) and revoke them' },
  subCommands: {
    list: () => import('./list.ts').then((m) => m.default),
    revoke: () => import('./revoke.ts').then((m) => m.default),
  },
})
