import { defineCommand } from 'citty'
import { jsonArg } from './_args.ts'
import { esc, note, printJsonLine } from './_out.ts'

export default defineCommand({
  meta: { name: 'logout', description: 'Revoke the token `muster login` saved, and remove the file' },
  args: { ...jsonArg },
  async run({ args }) {
    const { configFile, fetchFor, readSavedLogin } = await import('./_client.ts')
    const { logoutSaved } = await import('../src/client/logout.ts')
    const { rmSync } = await import('node:fs')
    const saved = readSavedLogin()
    const file = configFile()
    if (!saved) {
      if (args.json) return void printJsonLine({ loggedOut: false, revoked: false, file })
      return void note(esc`Not logged in (no ${file}).`)
    }
    // A Platform that cannot be reached keeps the file: the token still works, so say so and stop.
    const revoked = await logoutSaved(saved, fetchFor(saved.pin))
    rmSync(file, { force: true })
    if (args.json) return void printJsonLine({ loggedOut: true, revoked, url: saved.url, file })
    note(revoked ? esc`Logged out of ${saved.url}: the token is revoked and ${file} removed.` : esc`The saved token no longer worked on ${saved.url}; ${file} removed.`)
  },
})
