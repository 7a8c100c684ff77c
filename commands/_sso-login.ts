// `muster login --sso`: the browser where there is one (a loopback redirect),
// else the device flow (a URL and a code to enter on any device).
import { consola } from 'consola'
import type { StartDeviceSignInAnswer } from '../src/wire/oidc.ts'
import { browserCommand, openBrowser } from './_browser.ts'
import { clean, esc, note } from './_out.ts'

type Fetch = (url: string, init: RequestInit) => Promise<Response>

export async function ssoLogin(url: string, tokenName: string, opts: { device: boolean; fetch?: Fetch }) {
  const { ssoLoginDevice, ssoLoginLoopback } = await import('../src/client/sso-login.ts')
  if (!opts.device && browserCommand()) {
    return ssoLoginLoopback(url, tokenName, async (authUrl) => {
      if (await openBrowser(authUrl)) consola.info('Opened the browser to sign in; waiting for it to come back…')
      // The provider's URL and code come from outside: escaped (commands/_out.ts).
      else consola.info(`Open this URL in a browser on this machine to sign in:\n  ${clean(authUrl)}`)
    }, opts.fetch)
  }
  return ssoLoginDevice(url, tokenName, (d: StartDeviceSignInAnswer) => {
    note(esc`To sign in, open ${d.verificationUri} on any device and enter the code ${d.userCode}`)
    if (d.verificationUriComplete) note(esc`(or open ${d.verificationUriComplete})`)
    note(esc`Waiting for the sign-in (the code is valid for ${Math.round(d.expiresIn / 60)} minutes)…`)
  }, opts.fetch)
}
