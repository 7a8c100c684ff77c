import { defineCommand } from 'citty'

export default defineCommand({
  meta: { name: 'accounts', description: 'Accounts for people: add with a role (viewer, operator, superadmin), list, change role, disable, enable, remove (server.accounts.manage)' },
  subCommands: {
    add: () => import('./add.ts').then((m) => m.default),
    list: () => import('./list.ts').then((m) => m.default),
    'set-role': () => import('./set-role.ts').then((m) => m.default),
    disable: () => import('./disable.ts').then((m) => m.default),
    enable: () => import('./enable.ts').then((m) => m.default),
    remove: () => import('./remove.ts').then((m) => m.default),
  },
})
