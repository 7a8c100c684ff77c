import { defineCommand } from 'citty'
import { jsonArg, platformPinArgs } from './_args.ts'
import { tunable } from '../src/tunables.ts'
import { esc, printJsonLine } from './_out.ts'

export default defineCommand({
  meta: { name: 'login', description: 'Log in to a Platform and save an API token for later commands' },
  args: {
    'platform-url': { type: 'string', valueHint: 'URL', description: 'Platform URL (default: $MUSTER_URL, else http://127.0.0.1:7380)' },
    identifier: { type: 'string', valueHint: 'ACCOUNT', description: 'Account name (asked for when omitted)' },
    'password-file': { type: 'string', valueHint: 'FILE', description: 'Read the password from this file (else stdin or a no-echo prompt)' },
    sso: { type: 'boolean', description: "Sign in with the Platform's identity provider: a browser where there is one, else a URL and a code" },
    device: { type: 'boolean', description: 'With --sso: use the URL and code (device flow) even where a browser could open' },
    ...platformPinArgs,
    ...jsonArg,
  },
  async run({ args }) {
    const { DEFAULT_URL, fetchFor, pinFromArgs, saveLogin } = await import('./_client.ts')
    const { readSecret, promptText, hasTty } = await import('./_secret.ts')
    const { loginAndMintToken } = await import('../src/client/login.ts')
    const { MusterError } = await import('../src/errors.ts')
    const { hostname } = await import('node:os')
    const url = (args['platform-url'] || tunable('MUSTER_URL') || DEFAULT_URL).replace(/\/+$/, '')
    // The Platform is authenticated before the password is sent; the pin is saved with the login.
    const pin = pinFromArgs(args)
    const tokenName = `cli@${hostname()}`.slice(0, 64)
    if (args.sso || args.device) {
      if (args.identifier || args['password-file']) throw new MusterError('invalid-request', '--sso signs in at the identity provider: give no --identifier or --password-file with it.')
      const { ssoLogin } = await import('./_sso-login.ts')
      const minted = await ssoLogin(url, tokenName, { device: Boolean(args.device), fetch: fetchFor(pin) })
      return saved(args, url, minted, saveLogin({ url, token: minted.token, account: minted.account, ...(pin ? { pin } : {}) }))
    }
    let identifier = args.identifier
    if (!identifier) {
      if (!hasTty()) throw new MusterError('not-configured', 'No --identifier given and no terminal to ask on.')
      identifier = await promptText('Account')
    }
    const password = await readSecret({ what: 'password', file: { value: args['password-file'], flag: '--password-file' } })
    const minted = await loginAndMintToken(url, identifier, password, tokenName, fetchFor(pin))
    return saved(args, url, minted, saveLogin({ url, token: minted.token, account: minted.account, ...(pin ? { pin } : {}) }))
  },
})

async function saved(args: { json?: boolean }, url: string, minted: { account: string; role: string; expiresAt: string | null }, file: string) {
  if (args.json) return void printJsonLine({ url, account: minted.account, role: minted.role, saved: file, expiresAt: minted.expiresAt })
  const { consola } = await import('consola')
  consola.success(esc`Logged in to ${url} as ${minted.account} (${minted.role}); token saved to ${file}${minted.expiresAt ? `, valid until ${minted.expiresAt}` : ''} (\`muster logout\` revokes it)`)
}
