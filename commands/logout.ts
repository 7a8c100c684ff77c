import { defineCommand } from 'citty'
import { jsonArg } from './_args.ts'

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
      if (args.json) return void process.stdout.write(`${JSON.stringify({ loggedOut: false, revoked: false, file })}\n`)
      return void process.stderr.write(`Not logged in (no ${file}).\n`)
    }
    // A Platform that cannot be reached keeps the file: the token still works, so say so and stop.
    const revoked = await logoutSaved(saved, fetchFor(saved.pin))
    rmSync(file, { force: true })
    if (args.json) return void process.stdout.write(`${JSON.stringify({ loggedOut: true, revoked, url: saved.url, file })}\n`)
    process.stderr.write(revoked ? `Logged out of ${saved.url}: the token is revoked and ${file} removed.\n` : `The saved token no longer worked on ${saved.url}; ${file} removed.\n`)
  },
})
